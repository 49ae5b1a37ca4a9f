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

}  // namespace plait
