#pragma once
// What `plait plan` searches: every mesh dp x pp x tp of the accelerators (tp within a
// node and dividing the heads, pp dividing the blocks), every available plugin of each
// role with every combination of the values its schema lists under `plan` (API 12.4),
// the core's own (train.activation_checkpointing), and every microbatch size that splits
// the global batch. A candidate is the --set assignments a run of it takes; whether the
// plugins accept it is theirs to say when it is evaluated.
#include <cstdint>
#include <string>
#include <vector>

#include "loader/plugin_registry.hpp"
#include "model/model_spec.hpp"

namespace plait {

struct SearchLimits {
  int64_t gpus = 1;
  int64_t gpus_per_node = 1;
  int64_t global_batch = 1;                       // sequences per optimizer step
  std::vector<int64_t> micro_batches = {1, 2, 4, 8};
  bool offload = false;                           // try the offload plugins too
};

struct PlanCandidate {
  int64_t dp = 1, pp = 1, tp = 1, micro_batch = 1, grad_accum = 1;
  std::vector<std::string> sets;  // parallel.*, the plugins' options, the core's, the batch split
  // "zero stage=3 | 1f1b | megatron sequence_parallel=true | checkpointing selective"
  std::string plugins;
};

// One role's choices: each a plugin (or "none") with one combination of its plan values.
struct RoleVariant {
  std::string plugin;             // "none": the role is empty
  std::vector<std::string> sets;  // "zero.stage=3"
  std::string label;              // "zero stage=3"
};

// Every available plugin of `kind` with each combination of its schema's plan values.
std::vector<RoleVariant> role_variants(const PluginRegistry& registry, const std::string& kind);

// Every candidate for the model on the limits' accelerators.
std::vector<PlanCandidate> enumerate_candidates(const PluginRegistry& registry, const ModelSpec& model,
                                                const SearchLimits& limits);

}  // namespace plait
