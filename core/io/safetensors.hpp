#pragma once
// safetensors files (https://github.com/huggingface/safetensors): an 8-byte little-endian
// header length, a JSON header {name: {dtype, shape, data_offsets}}, then the raw bytes.
// Written to a temporary name and renamed, so a file either exists whole or not at all.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace plait {

using NamedTensorList = std::vector<std::pair<std::string, at::Tensor>>;

void save_safetensors(const std::string& path, const NamedTensorList& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// Tensors in file order (by offset), on the CPU.
NamedTensorList load_safetensors(const std::string& path);

// For checkpoints: the file is fsynced before its rename, and what was written is
// returned with its xxh3-64 checksum (computed while writing: nothing is read back).
// With `block_bytes_for` (the file's size -> a block size): also the xxh3-64 of each block, concatenated.
struct WrittenFile {
  int64_t bytes = 0;
  std::string xxh3;  // 16 hex digits
  int64_t block_bytes = 0;
  std::string blocks;
};
WrittenFile save_safetensors_durable(const std::string& path, const NamedTensorList& tensors,
                                     int64_t (*block_bytes_for)(int64_t file_bytes) = nullptr);
// 16 hex digits of an xxh3-64 hash.
std::string xxh3_hex(const void* data, std::size_t bytes);

// Where each tensor's bytes are, for reading parts without loading the file.
struct StoredTensor {
  at::ScalarType dtype;
  std::vector<int64_t> shape;
  int64_t begin = 0, end = 0;  // absolute byte offsets in the file
};
std::map<std::string, StoredTensor> read_safetensors_header(const std::string& path);
// The same from the header's JSON text (the bytes after the 8-byte length), already read.
std::map<std::string, StoredTensor> parse_safetensors_header(const std::string& text, int64_t file_size,
                                                             const std::string& path);
std::string safetensors_dtype_name(at::ScalarType type);
// `where` names the file in the error for a name plait does not read.
at::ScalarType safetensors_dtype(const std::string& name, const std::string& where);

}  // namespace plait
