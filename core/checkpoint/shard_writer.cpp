#include "checkpoint/shard_writer.hpp"

#include <algorithm>

#include "io/safetensors.hpp"
#include "plait/sdk/error.hpp"
#include "util/json_problem.hpp"

namespace plait::checkpoint {

int64_t checksum_block_bytes(int64_t file_bytes) {
  return std::clamp<int64_t>(file_bytes / 1024, 4 * 1024, 64 * 1024);
}

RankShard write_rank_shard(const std::filesystem::path& staging, int rank, const std::vector<OwnedPart>& parts) {
  RankShard shard;
  shard.file = concat("rank-", rank, ".safetensors");
  NamedTensorList tensors;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    const OwnedPart& p = parts[k];
    TensorPart where = p.where;
    where.file = shard.file;
    where.key = concat(p.name, "@", k);
    PLAIT_CHECK(p.values.numel() == where.numel(),
                concat("checkpoint: the part of ", p.name, " rank ", rank, " saves has ", p.values.numel(),
                       " elements, its description ", where.numel()),
                "a data plugin's state parts must hold what they say");
    TensorEntry& e = shard.tensors[p.name];
    e.dtype = safetensors_dtype_name(p.values.scalar_type());
    e.shape = p.global_shape;
    e.parts.push_back(where);
    tensors.emplace_back(where.key, p.values.reshape({-1}));
  }
  const WrittenFile written = save_safetensors_durable((staging / shard.file).string(), tensors, &checksum_block_bytes);
  shard.entry = {written.bytes, written.xxh3, written.block_bytes, written.blocks};
  return shard;
}

nlohmann::json shard_to_json(const RankShard& shard) {
  nlohmann::ordered_json tensors = nlohmann::ordered_json::object();
  for (const auto& [name, t] : shard.tensors) tensors[name] = tensor_to_json(t);
  return {{"file", shard.file},           {"bytes", shard.entry.bytes},  {"xxh3", shard.entry.xxh3},
          {"block_bytes", shard.entry.block_bytes}, {"blocks", shard.entry.blocks}, {"tensors", tensors}};
}

RankShard shard_from_json(const nlohmann::json& j) {
  RankShard shard;
  try {
    shard.file = j.at("file").get<std::string>();
    shard.entry = {j.at("bytes").get<int64_t>(), j.at("xxh3").get<std::string>(), j.at("block_bytes").get<int64_t>(),
                   j.at("blocks").get<std::string>()};
    for (const auto& [name, t] : j.at("tensors").items()) shard.tensors[name] = tensor_from_json(t);
  } catch (const nlohmann::json::exception& e) {
    throw Error(concat("checkpoint: a rank's report of what it saved is malformed: ", json_problem(e)), "");
  }
  return shard;
}

void merge_shard(CheckpointIndex& index, const RankShard& shard) {
  index.files[shard.file] = shard.entry;
  for (const auto& [name, t] : shard.tensors) {
    auto [it, fresh] = index.tensors.emplace(name, TensorEntry{t.dtype, t.shape, {}});
    PLAIT_CHECK(it->second.dtype == t.dtype && it->second.shape == t.shape,
                concat("checkpoint: ranks disagree on tensor ", name, " (", it->second.dtype, " vs ", t.dtype, ")"),
                "every rank must describe a tensor with its global shape and one dtype");
    it->second.parts.insert(it->second.parts.end(), t.parts.begin(), t.parts.end());
  }
}

}  // namespace plait::checkpoint
