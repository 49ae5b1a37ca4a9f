#pragma once
// The weights of a Hugging Face model folder (model.safetensors, or shards listed in
// model.safetensors.index.json), by plait's parameter names and in plait's layout
// (GPT-2's Conv1D weights transposed back). Tensors are read one at a time, on demand.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "io/safetensors.hpp"

namespace plait {

// Whether `path` is a Hugging Face model folder (config.json), not a plait checkpoint.
bool is_hf_folder(const std::filesystem::path& path);

class HfWeights {
 public:
  // Refuses a folder without model.safetensors or its index, naming what is missing.
  HfWeights(std::filesystem::path folder, std::string family);
  const std::filesystem::path& folder() const { return folder_; }
  bool has(const std::string& name) const { return tensors_.count(name) > 0; }
  std::vector<int64_t> shape(const std::string& name) const;  // plait's layout
  std::vector<std::string> names() const;
  at::Tensor load(const std::string& name) const;  // plait's layout, on the CPU

 private:
  struct Entry {
    std::filesystem::path file;
    StoredTensor stored;
  };
  std::filesystem::path folder_;
  std::string family_;
  std::map<std::string, Entry> tensors_;
};

// Writes `weights` (plait names and layout) as a Hugging Face folder: config.json, and
// model.safetensors, or shards of at most `shard_bytes` with model.safetensors.index.json.
void write_hf_folder(const std::filesystem::path& folder, const std::string& family, const std::string& config_json,
                     const NamedTensorList& weights, int64_t shard_bytes);

}  // namespace plait
