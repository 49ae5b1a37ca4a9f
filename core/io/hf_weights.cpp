#include "io/hf_weights.hpp"

#include <fstream>
#include <set>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "model/hf_format.hpp"
#include "plait/sdk/error.hpp"
#include "util/json_problem.hpp"

namespace plait {
namespace fs = std::filesystem;

bool is_hf_folder(const fs::path& path) { return fs::exists(path / "config.json"); }

HfWeights::HfWeights(fs::path folder, std::string family) : folder_(std::move(folder)), family_(std::move(family)) {
  std::vector<fs::path> files;
  const fs::path index = folder_ / "model.safetensors.index.json";
  if (fs::exists(index)) {
    std::set<std::string> shards;
    try {
      const nlohmann::json j = nlohmann::json::parse(std::ifstream(index));
      for (const auto& [name, file] : j.at("weight_map").items()) shards.insert(file.get<std::string>());
    } catch (const std::exception& e) {
      throw Error(concat(index.string(), " is not a safetensors index (a weight_map of file names): ", json_problem(e)),
                  "the folder is damaged; save it again with save_pretrained");
    }
    for (const auto& f : shards) files.push_back(folder_ / f);
  } else {
    PLAIT_CHECK(fs::exists(folder_ / "model.safetensors"),
                concat(folder_.string(), " holds neither model.safetensors nor model.safetensors.index.json"),
                "name a Hugging Face model folder (save_pretrained's) or a plait checkpoint");
    files.push_back(folder_ / "model.safetensors");
  }
  for (const auto& file : files) {
    PLAIT_CHECK(fs::exists(file), concat(file.string(), " is missing"), "the model folder is incomplete");
    for (auto& [name, stored] : read_safetensors_header(file.string())) tensors_[name] = {file, stored};
  }
}

std::vector<int64_t> HfWeights::shape(const std::string& name) const {
  std::vector<int64_t> s = tensors_.at(name).stored.shape;
  if (hf_transposed(family_, name) && s.size() == 2) std::swap(s[0], s[1]);
  return s;
}

std::vector<std::string> HfWeights::names() const {
  std::vector<std::string> out;
  for (const auto& [name, e] : tensors_) out.push_back(name);
  return out;
}

at::Tensor HfWeights::load(const std::string& name) const {
  const Entry& e = tensors_.at(name);
  at::Tensor t = at::empty(e.stored.shape, at::TensorOptions().dtype(e.stored.dtype));
  std::ifstream in(e.file, std::ios::binary);
  in.seekg(e.stored.begin);
  in.read(static_cast<char*>(t.data_ptr()), e.stored.end - e.stored.begin);
  PLAIT_CHECK(in.good() && static_cast<int64_t>(t.nbytes()) == e.stored.end - e.stored.begin,
              concat("reading ", name, " from ", e.file.string(), " failed"), "the file is damaged or truncated");
  return hf_transposed(family_, name) ? t.t().contiguous() : t;
}

void write_hf_folder(const fs::path& folder, const std::string& family, const std::string& config_json,
                     const NamedTensorList& weights, int64_t shard_bytes) {
  fs::create_directories(folder);
  std::vector<NamedTensorList> shards(1);
  int64_t in_shard = 0, total = 0;
  for (const auto& [name, t] : weights) {
    const at::Tensor stored = hf_transposed(family, name) ? t.t().contiguous() : t.contiguous();
    const auto bytes = static_cast<int64_t>(stored.nbytes());
    if (!shards.back().empty() && in_shard + bytes > shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().emplace_back(name, stored);
    in_shard += bytes;
    total += bytes;
  }
  const std::map<std::string, std::string> metadata = {{"format", "pt"}};
  if (shards.size() == 1) {
    save_safetensors((folder / "model.safetensors").string(), shards.front(), metadata);
  } else {
    nlohmann::ordered_json map = nlohmann::ordered_json::object();
    for (std::size_t k = 0; k < shards.size(); ++k) {
      char file[64];
      std::snprintf(file, sizeof(file), "model-%05zu-of-%05zu.safetensors", k + 1, shards.size());
      save_safetensors((folder / file).string(), shards[k], metadata);
      for (const auto& [name, t] : shards[k]) map[name] = file;
    }
    const nlohmann::ordered_json index = {{"metadata", {{"total_size", total}}}, {"weight_map", map}};
    std::ofstream(folder / "model.safetensors.index.json") << index.dump(2) << "\n";
  }
  std::ofstream(folder / "config.json") << config_json << "\n";
}

}  // namespace plait
