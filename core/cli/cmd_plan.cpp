// plait plan --explain CONFIG: one config's predicted memory per accelerator and step time
// by phase on a machine, from the plugins' own cost models and the core's.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "plait/sdk/error.hpp"
#include "plan/config_prediction.hpp"
#include "plan/hardware.hpp"
#include "run/prepare.hpp"
#include "util/human_bytes.hpp"

namespace plait::cli {
namespace {

// --gpus N keeps the config's pp and tp and gives data parallel the rest.
std::vector<std::string> with_gpus(const PlanArgs& args) {
  std::vector<std::string> sets = args.sets;
  if (!args.gpus) return sets;
  const PreparedRun asked = prepare_run(args.explain, sets, 0, /*scan_data=*/false);
  const int64_t model_ranks = asked.mesh.pp * asked.mesh.tp;
  PLAIT_CHECK(*args.gpus % model_ranks == 0,
              concat("--gpus ", *args.gpus, ": the config's pp ", asked.mesh.pp, " x tp ", asked.mesh.tp, " = ",
                     model_ranks, " does not divide it"),
              concat("give a multiple of ", model_ranks, ", or change parallel.pp or parallel.tp with --set"));
  sets.push_back(concat("parallel.dp=", *args.gpus / model_ranks));
  return sets;
}

nlohmann::ordered_json phases_json(const StepPhases& s) {
  return {{"compute_ms", s.compute * 1e3},  {"memory_bound_ms", s.memory_bound * 1e3}, {"tp_comm_ms", s.tp_comm * 1e3},
          {"pp_comm_ms", s.pp_comm * 1e3},  {"bubble_ms", s.bubble * 1e3},             {"dp_comm_ms", s.dp_comm * 1e3},
          {"optimizer_ms", s.optimizer * 1e3}, {"offload_ms", s.offload * 1e3},        {"step_ms", s.total() * 1e3}};
}

nlohmann::ordered_json rank_json(const RankMemory& m) {
  return {{"pp_rank", m.pp_rank},
          {"param_bytes", m.state.params},
          {"grad_bytes", m.state.grads},
          {"optimizer_bytes", m.state.optimizer},
          {"transient_bytes", m.transient},
          {"activation_bytes", m.activations},
          {"device_bytes", m.device()},
          {"host_param_bytes", m.state.host_params},
          {"host_grad_bytes", m.state.host_grads},
          {"host_optimizer_bytes", m.state.host_optimizer}};
}

nlohmann::ordered_json prediction_json(const ConfigPrediction& p, const Hardware& hw, const std::string& config) {
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  for (const RankMemory& m : p.ranks) ranks.push_back(rank_json(m));
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  for (const CommOp& op : p.data_ops) {
    ops.push_back({{"what", op.what}, {"bytes", op.bytes}, {"count", op.count},
                   {"overlaps", op.overlaps_backward ? "backward" : op.overlaps_forward ? "forward" : "none"}});
  }
  return {{"config", config},
          {"hardware", hw.id},
          {"gpus", p.gpus()},
          {"dp", p.dp},
          {"pp", p.pp},
          {"tp", p.tp},
          {"data", p.data_plugin},
          {"schedule", p.schedule},
          {"sequence_parallel", p.sequence_parallel},
          {"checkpointing", p.checkpointing},
          {"dtype", p.dtype},
          {"micro_batch", p.layout.rank.micro_batch},
          {"microbatches", p.layout.microbatches},
          {"seq_len", p.layout.rank.seq_len},
          {"fits", p.fits()},
          {"why_not", p.why_not()},
          {"usable_bytes", p.usable_bytes},
          {"busiest_pp_rank", p.ranks[p.busiest].pp_rank},
          {"ranks", ranks},
          {"data_ops", ops},
          {"phases", phases_json(p.phases)},
          {"tokens_per_step", p.tokens_per_step},
          {"tokens_per_s_per_gpu", p.tokens_per_s_per_gpu},
          {"mfu", p.mfu}};
}

void print_memory(const ConfigPrediction& p) {
  const RankMemory& m = p.ranks[p.busiest];
  std::printf("memory per accelerator (pipeline rank %lld, the fullest):\n", static_cast<long long>(m.pp_rank));
  const std::pair<const char*, int64_t> rows[] = {{"parameters", m.state.params},
                                                   {"gradients", m.state.grads},
                                                   {"optimizer state", m.state.optimizer},
                                                   {"data plugin's transient", m.transient},
                                                   {"activations held", m.activations}};
  for (const auto& [what, bytes] : rows) std::printf("  %-26s %12s\n", what, human_bytes(bytes).c_str());
  std::printf("  %-26s %12s of %s usable: %s\n", "total", human_bytes(m.device()).c_str(),
              human_bytes(static_cast<int64_t>(p.usable_bytes)).c_str(),
              p.fits() ? "fits" : ("does not fit: " + p.why_not()).c_str());
  if (m.host() > 0) std::printf("  %-26s %12s\n", "host (offloaded)", human_bytes(m.host()).c_str());
}

void print_phases(const ConfigPrediction& p) {
  const StepPhases& s = p.phases;
  std::printf("step time, ms (the busiest rank):\n");
  const std::pair<const char*, double> rows[] = {{"matrix products", s.compute},
                                                  {"memory-bound kernels", s.memory_bound},
                                                  {"tensor parallel comm", s.tp_comm},
                                                  {"pipeline sends", s.pp_comm},
                                                  {"pipeline bubble", s.bubble},
                                                  {"data parallel comm (exposed)", s.dp_comm},
                                                  {"optimizer step", s.optimizer},
                                                  {"offload", s.offload}};
  for (const auto& [what, t] : rows) {
    std::printf("  %-30s %10.3f %5.1f%%\n", what, t * 1e3, 100.0 * t / s.total());
  }
  std::printf("  %-30s %10.3f\n", "total", s.total() * 1e3);
  std::printf("%.0f tokens per step; %.1f tokens/s per accelerator; MFU %.1f%%\n", p.tokens_per_step,
              p.tokens_per_s_per_gpu, 100.0 * p.mfu);
}

void print_prediction(const ConfigPrediction& p, const Hardware& hw, const std::string& config) {
  std::printf("%s on %lld x %s (%s)\n", config.c_str(), static_cast<long long>(p.gpus()), hw.id.c_str(), hw.name.c_str());
  std::printf("dp %lld x pp %lld x tp %lld%s; data '%s'; schedule '%s'; %lld microbatch%s of %lld x %lld tokens; "
              "checkpointing %s; %s\n",
              static_cast<long long>(p.dp), static_cast<long long>(p.pp), static_cast<long long>(p.tp),
              p.sequence_parallel ? " (sequence parallel)" : "", p.data_plugin.c_str(), p.schedule.c_str(),
              static_cast<long long>(p.layout.microbatches), p.layout.microbatches == 1 ? "" : "es",
              static_cast<long long>(p.layout.rank.micro_batch), static_cast<long long>(p.layout.rank.seq_len),
              p.checkpointing.c_str(), p.dtype.c_str());
  print_memory(p);
  print_phases(p);
}

}  // namespace

int plan(const PlanArgs& args) {
  const Hardware hw = load_hardware(args.hardware);
  const PreparedRun run = prepare_run(args.explain, with_gpus(args), 0, /*scan_data=*/false);
  const ConfigPrediction p = predict_config(run, hw);
  if (args.json) {
    std::printf("%s\n", prediction_json(p, hw, args.explain).dump(2).c_str());
  } else {
    print_prediction(p, hw, args.explain);
  }
  return 0;
}

}  // namespace plait::cli
