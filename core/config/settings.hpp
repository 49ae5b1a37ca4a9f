#pragma once
// The core's tables, read once after validation into typed fields, so that the core reads
// `config.train().steps` instead of a string key and a type at each use. Each key's
// meaning and default is in core/config/schema/<table>.toml; a message that names where a
// value was set still asks the table (`config.table("train").where("lr")`), and a check
// that takes a whole table (data files, resume sources) still gets the table.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace plait {

class Options;

struct TrainSettings {
  int64_t steps = 0;
  double lr = 0.0;
  std::string lr_schedule;
  int64_t warmup_steps = 0;
  double min_lr_ratio = 0.0;
  double weight_decay = 0.0, beta1 = 0.0, beta2 = 0.0, eps = 0.0;
  double grad_clip = 0.0;
  int64_t grad_accum = 1;
  std::string dtype;
  int64_t seed = 0;
  double peak_flops = 0.0;
  int64_t threads = 0;
  std::string device;
  double memory_limit_mb = 0.0;
  bool cache_freed_blocks = true;
  std::string activation_checkpointing;
  std::string on_nonfinite;
  int64_t nonfinite_skip_limit = 0;
  bool tensorboard = true;
  int64_t log_every = 1;
  bool phase_timing = true;
  std::string rank_metrics;

  // From a validated [train] table (every key present, typed as the schema says).
  static TrainSettings from(const Options& train);
};

// Where the tokens come from; the sequence length left unset follows the model's block_size
// (resolve_seq_len, which also names where it was set).
struct DataSettings {
  std::string source;
  std::optional<std::string> path;
  std::string order;
  int64_t micro_batch_size = 0;
  std::optional<int64_t> seq_len;

  static DataSettings from(const Options& data);
};

// Which plugin plays each role ("none": absent) and the mesh.
struct ParallelSettings {
  std::string data, pipeline, tensor, offload, adapter, comm;
  std::vector<int64_t> stage_blocks;
  int64_t dp = 1, pp = 1, tp = 1;

  static ParallelSettings from(const Options& parallel);
};

struct CheckpointSettings {
  int64_t every = 0;
  int64_t keep_last = 0;
  bool async = false;
  bool final = true;
  bool final_is_default = true;  // only a default `final` may meet a plugin that cannot save
  std::string resume;
  bool allow_batch_change = false;
  bool save_init = false, save_final = false;

  static CheckpointSettings from(const Options& checkpoint);
};

struct DebugSettings {
  bool dump_logits = false, dump_grads = false;
  std::vector<int64_t> trace_steps;
  int64_t nonfinite_step = 0, nonfinite_rank = 0;
  double slow_ms = 0.0;
  int64_t slow_rank = 0;
  bool count_host_syncs = false, count_wire_bytes = false;
  std::vector<std::string> faults;  // as written (debug/fault_plan.hpp parses them)

  static DebugSettings from(const Options& debug);
};

struct DistributedSettings {
  double rendezvous_timeout_s = 0.0, collective_timeout_s = 0.0, hang_warning_s = 0.0;
  int64_t flight_recorder_ops = 0;
  int64_t max_restarts = 0;
  bool bind_cores = false;

  static DistributedSettings from(const Options& distributed);
};

}  // namespace plait
