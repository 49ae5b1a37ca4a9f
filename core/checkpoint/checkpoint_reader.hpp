#pragma once
// Reads what a rank needs of a checkpoint: a region of a tensor (a flat range of its
// row-major elements, or a rectangular slice), assembled from whichever parts hold it,
// whatever mesh and strategy wrote them. Only the parts that overlap the region are
// read, and of a flat part only the overlapping bytes (pread), so ranks together read
// about the checkpoint once, never all of it each.
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
  int64_t bytes_read() const { return bytes_read_; }

 private:
  struct OpenFile {
    int fd = -1;
    std::map<std::string, StoredTensor> tensors;
  };
  OpenFile& open(const std::string& file);
  const StoredTensor& stored(const TensorPart& part, const TensorEntry& entry, const std::string& name);
  void pread_into(const std::string& file, void* into, int64_t bytes, int64_t at);

  std::filesystem::path folder_;
  CheckpointIndex index_;
  std::map<std::string, OpenFile> files_;
  int64_t bytes_read_ = 0;
};

}  // namespace plait::checkpoint
