#include "train/frozen_parameters.hpp"

#include <fnmatch.h>

#include <set>

#include "plait/sdk/error.hpp"

namespace plait {

std::vector<std::string> frozen_names(const StageModel& whole, const Options& train) {
  const auto patterns = train.get<std::vector<std::string>>("freeze");
  std::set<std::string> frozen;
  if (patterns.empty()) return {};
  const std::vector<ParamRef> params = whole.all_parameters();
  for (const std::string& pattern : patterns) {
    bool matched = false;
    for (const ParamRef& p : params) {
      if (::fnmatch(pattern.c_str(), p.name.c_str(), 0) != 0) continue;
      matched = true;
      frozen.insert(p.name);
    }
    PLAIT_CHECK(matched,
                concat(train.where("freeze"), ": [train] freeze pattern \"", pattern, "\" matches no parameter of the model"),
                concat("patterns match the reference names checkpoints and exports use, such as \"", params.front().name,
                       "\" or \"", params.back().name, "\"; * and ? as in shell globs"));
  }
  PLAIT_CHECK(frozen.size() < params.size(),
              concat(train.where("freeze"), ": [train] freeze freezes all ", params.size(), " parameters: nothing would train"),
              "leave some parameters out of the patterns");
  return {frozen.begin(), frozen.end()};
}

void freeze_parameters(const StageModel& whole, const Options& train) {
  const std::vector<std::string> names = frozen_names(whole, train);
  const std::set<std::string> frozen(names.begin(), names.end());
  for (const ParamRef& p : whole.all_parameters()) {
    if (frozen.count(p.name) != 0) p.tensor.requires_grad_(false);
  }
}

void store_frozen_linears(const StageModel& whole, const std::set<const void*>& linear_weights, const Options& train) {
  if (train.get<std::string>("frozen_dtype") != "bfloat16") return;
  at::NoGradGuard no_grad;
  for (const ParamRef& p : whole.all_parameters()) {
    if (p.tensor.requires_grad() || linear_weights.count(p.tensor.unsafeGetTensorImpl()) == 0) continue;
    p.tensor.set_data(p.tensor.detach().to(at::kBFloat16));
  }
}

void check_frozen_dtype(const Options& train, const std::string& adapter) {
  const std::string dtype = train.get<std::string>("frozen_dtype");
  if (dtype == "same") return;
  PLAIT_CHECK(train.get<std::string>("dtype") == "bfloat16",
              concat(train.where("frozen_dtype"), ": [train] frozen_dtype = \"", dtype, "\" needs bf16 compute, but "
                     "train.dtype = \"", train.get<std::string>("dtype"), "\" would read the weights in that type"),
              "set [train] dtype = \"bfloat16\" (fp32 master weights for what trains), or remove frozen_dtype");
  PLAIT_CHECK(adapter != "none" || !train.get<std::vector<std::string>>("freeze").empty(),
              concat(train.where("frozen_dtype"), ": [train] frozen_dtype = \"", dtype,
                     "\", but nothing is frozen: no [parallel] adapter and no [train] freeze"),
              "set an adapter or freeze patterns, or remove frozen_dtype");
}

std::vector<StatePart> frozen_state_parts(const StageModel& rank_model, int dp, int dp_rank) {
  std::vector<StatePart> parts;
  for (const ParamRef& p : rank_model.all_parameters()) {
    if (p.tensor.requires_grad() || p.tensor.is_meta()) continue;
    parts.push_back({.param = p.name, .kind = state_kind::param, .start = 0, .values = p.tensor.detach(),
                     .replicas = dp, .replica = dp_rank});
  }
  return parts;
}

void load_frozen_parameters(StateSource& source, const StageModel& rank_model) {
  at::NoGradGuard no_grad;
  for (const ParamRef& p : rank_model.all_parameters()) {
    if (!p.tensor.requires_grad() && !p.tensor.is_meta()) source.read_into(p.tensor.detach(), p.name, state_kind::param, 0);
  }
}

int64_t frozen_bytes(const StageModel& rank_model) {
  int64_t bytes = 0;
  for (const ParamRef& p : rank_model.all_parameters()) {
    if (!p.tensor.requires_grad() && !p.tensor.is_meta()) bytes += static_cast<int64_t>(p.tensor.nbytes());
  }
  return bytes;
}

}  // namespace plait
