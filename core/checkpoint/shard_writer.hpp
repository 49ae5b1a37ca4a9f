#pragma once
// One rank's share of a checkpoint: the parts of tensors it owns, written to its own
// safetensors file in the staging folder, and the index entries that describe them.
// Ranks write in parallel; rank 0 merges their descriptions into the index.
#include <filesystem>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint_index.hpp"

namespace plait::checkpoint {

struct OwnedPart {
  std::string name;                   // the tensor's reference name
  std::vector<int64_t> global_shape;  // the whole tensor's
  TensorPart where;                   // flat range or slice; file and key are filled in
  at::Tensor values;                  // the part's elements (any shape with its numel), in host memory
  bool borrowed = false;              // values are the plugin's own memory, not a copy
};

struct RankShard {
  std::string file;
  FileEntry entry;
  std::map<std::string, TensorEntry> tensors;  // each with this rank's parts only
};

// The checksum block of a file: a reader whose range ends inside a block it has not
// checked reads the whole block, so blocks are small in small files (at most 1024 of
// them, from 4 KiB) and 64 KiB from 64 MiB up, which keeps such reads a few percent of
// the checkpoint and the index's checksums under 0.03% of the bytes.
int64_t checksum_block_bytes(int64_t file_bytes);

RankShard write_rank_shard(const std::filesystem::path& staging, int rank, const std::vector<OwnedPart>& parts);

// For the trip to rank 0 (through the job store) and back.
nlohmann::json shard_to_json(const RankShard& shard);
RankShard shard_from_json(const nlohmann::json& j);
// Adds a rank's files and parts; a tensor seen before must have the same dtype and shape.
void merge_shard(CheckpointIndex& index, const RankShard& shard);

}  // namespace plait::checkpoint
