#pragma once
// Reads what a rank needs of a checkpoint: a region of a tensor (a flat range of its
// row-major elements, or a rectangular slice), assembled from whichever parts hold it,
// whatever mesh and strategy wrote them. Only the parts that overlap the region are
// read, and of a flat part only the overlapping bytes (pread), so ranks together read
// about the checkpoint once, never all of it each. Every byte read is checked: the first
// read of a block of a file reads the whole block and compares its checksum with the
// index's, and a file's missing, short or damaged block is refused naming the file.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "checkpoint/checkpoint_index.hpp"
#include "io/safetensors.hpp"

namespace plait::checkpoint {

struct Region {
  bool flat = true;
  int64_t start = 0, length = 0;          // flat
  std::vector<int64_t> offsets, lengths;  // slice
  static Region whole(const TensorEntry& entry);
  static Region range(int64_t start, int64_t length) { return {true, start, length, {}, {}}; }
  static Region slice(std::vector<int64_t> offsets, std::vector<int64_t> lengths) {
    return {false, 0, 0, std::move(offsets), std::move(lengths)};
  }
};

class CheckpointReader {
 public:
  explicit CheckpointReader(std::filesystem::path folder);
  ~CheckpointReader();
  CheckpointReader(const CheckpointReader&) = delete;
  CheckpointReader& operator=(const CheckpointReader&) = delete;

  const CheckpointIndex& index() const { return index_; }
  const std::filesystem::path& folder() const { return folder_; }
  // Every listed file present, of its size and checksum; the first that is not is named.
  void verify() const;
  // The region of tensor `name`: shape [length] for a range, the lengths for a slice.
  at::Tensor read(const std::string& name, const Region& region);
  // The same into `out`: a contiguous host tensor of the checkpoint's dtype and the
  // region's size (flat parts are read straight into it).
  void read_into(const std::string& name, const Region& region, const at::Tensor& out);
  at::ScalarType dtype_of(const std::string& name) const;
  int64_t bytes_read() const { return bytes_read_; }

 private:
  struct OpenFile {
    int fd = -1;
    std::map<std::string, StoredTensor> tensors;
    const FileEntry* entry = nullptr;
    std::vector<bool> verified;  // per checksum block
    // The run of blocks checked last: parts and regions go through a file in order, so the
    // next read usually starts in it and takes its bytes from here, not from the disk again.
    std::vector<char> cache;
    int64_t cached_first = -1, cached_count = 0;
  };
  OpenFile& open(const std::string& file);
  const StoredTensor& stored(const TensorPart& part, const TensorEntry& entry, const std::string& name);
  void pread_into(const std::string& file, void* into, int64_t bytes, int64_t at);
  void raw_pread(OpenFile& f, const std::string& file, char* into, int64_t bytes, int64_t at);

  std::filesystem::path folder_;
  CheckpointIndex index_;
  std::map<std::string, OpenFile> files_;
  int64_t bytes_read_ = 0;
};

// Every tensor of two checkpoints compared whole, bit for bit: why the first that
// differs does, or "" when they hold the same state (how a resumed run is judged).
std::string first_difference(const std::filesystem::path& a, const std::filesystem::path& b);

}  // namespace plait::checkpoint
