#pragma once
// The index of a checkpoint folder (index.json): what was saved, under which mesh and
// plugins, and for every tensor by its reference name its dtype, global shape and the
// parts that hold it. A part is either a flat range of the tensor's row-major elements
// (a ZeRO/FSDP shard of a padded buffer, clipped to the tensor) or a rectangular slice
// (a Megatron shard), so no strategy has to gather a whole tensor to save it. Every
// file is listed with its size and xxh3-64 checksum. See docs/checkpoint-format.md.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace plait::checkpoint {

inline constexpr int kFormatVersion = 1;

struct TensorPart {
  std::string file;  // in the checkpoint folder
  std::string key;   // the safetensors key that holds the part's elements
  // flat: elements [start, start + length) of the row-major tensor; else a slice.
  bool flat = true;
  int64_t start = 0, length = 0;
  std::vector<int64_t> offsets, lengths;  // slice: per dimension
  int64_t numel() const;
};

struct TensorEntry {
  std::string dtype;            // safetensors' names: F32, BF16, ...
  std::vector<int64_t> shape;   // the global shape
  std::vector<TensorPart> parts;
  int64_t numel() const;
};

// Besides the whole file's checksum, one per block of block_bytes (the last may be
// shorter), concatenated: a rank that reads part of a file verifies the blocks it reads,
// so a resume checks every byte it uses without reading any file twice.
struct FileEntry {
  int64_t bytes = 0;
  std::string xxh3;  // 16 hex digits
  int64_t block_bytes = 0;
  std::string blocks;  // 16 hex digits per block
};

struct CheckpointIndex {
  int format_version = kFormatVersion;
  std::string plait_version, libtorch_version;
  int64_t step = 0, tokens = 0, samples = 0;
  std::map<std::string, int64_t> mesh;         // dp, pp, tp
  std::map<std::string, std::string> plugins;  // role -> plugin ("data": "zero", ...)
  std::map<std::string, TensorEntry> tensors;
  std::map<std::string, FileEntry> files;
  nlohmann::ordered_json state = nlohmann::ordered_json::object();  // lr schedule, sampler, ... by owner
};

nlohmann::ordered_json to_json(const CheckpointIndex& index);
nlohmann::ordered_json tensor_to_json(const TensorEntry& entry);
TensorEntry tensor_from_json(const nlohmann::json& j);  // throws nlohmann's errors
// `where` names the file in errors.
CheckpointIndex index_from_json(const nlohmann::json& j, const std::string& where);

// Elements between neighbours along each dimension of a row-major tensor of `shape`.
inline std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (std::size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

// Refuses parts that fall outside their tensor, overlap, or do not cover it whole.
void check_parts_cover(const std::string& name, const TensorEntry& entry, const std::string& where);

}  // namespace plait::checkpoint
