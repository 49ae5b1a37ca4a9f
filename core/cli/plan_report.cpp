#include "cli/plan_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <vector>

#include "util/human_bytes.hpp"
#include "util/short_number.hpp"

namespace plait::cli {

std::string figure(double x) {
  if (!(x > 0) || x >= 100) return concat(std::llround(x));
  return fixed_digits(x, 2);
}

namespace {

// A step's seconds in a column: three significant digits, never in exponent form
// ("0.244", "12.5", "0.0000964").
std::string step_seconds(double s) { return s > 0 ? fixed_digits(s, 3) : "0"; }

nlohmann::ordered_json phases_json(const StepPhases& s) {
  return {{"compute_ms", s.compute * 1e3},
          {"memory_bound_ms", s.memory_bound * 1e3},
          {"tp_comm_ms", s.tp_comm * 1e3},
          {"pp_comm_ms", s.pp_comm * 1e3},
          {"bubble_ms", s.bubble * 1e3},
          {"dp_comm_beside_ms", s.dp_comm_beside * 1e3},
          {"dp_comm_ms", s.dp_comm * 1e3},
          {"optimizer_ms", s.optimizer * 1e3},
          {"offload_ms", s.offload * 1e3},
          {"core_comm_ms", s.core_comm * 1e3},
          {"step_ms", s.total() * 1e3}};
}

nlohmann::ordered_json rank_json(const RankMemory& m) {
  return {{"pp_rank", m.pp_rank},
          {"param_bytes", m.state.params},
          {"grad_bytes", m.state.grads},
          {"optimizer_bytes", m.state.optimizer},
          {"transient_bytes", m.transient},
          {"frozen_param_bytes", m.frozen},
          {"activation_bytes", m.activations},
          {"device_bytes", m.device()},
          {"host_param_bytes", m.state.host_params},
          {"host_grad_bytes", m.state.host_grads},
          {"host_optimizer_bytes", m.state.host_optimizer}};
}

}  // namespace

nlohmann::ordered_json prediction_json(const ConfigPrediction& p, const Hardware& hw, const std::string& config) {
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  for (const RankMemory& m : p.ranks) ranks.push_back(rank_json(m));
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  for (const CommOp& op : p.data_ops) {
    ops.push_back({{"what", op.what}, {"bytes", op.bytes}, {"count", op.count},
                   {"overlaps", op.overlaps_backward ? "backward" : op.overlaps_forward ? "forward" : "none"},
                   {"group", op.group.size}, {"group_per_node", op.group.per_node}});
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

namespace {

void print_memory(const ConfigPrediction& p) {
  const RankMemory& m = p.ranks[p.busiest];
  std::printf("memory per accelerator (pipeline rank %lld, the fullest):\n", static_cast<long long>(m.pp_rank));
  const std::pair<const char*, int64_t> rows[] = {{"parameters", m.state.params},
                                                   {"gradients", m.state.grads},
                                                   {"optimizer state", m.state.optimizer},
                                                   {"data plugin's transient", m.transient},
                                                   {"frozen parameters", m.frozen},
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
                                                  {"data parallel comm (beside compute)", s.dp_comm_beside},
                                                  {"data parallel comm (exposed)", s.dp_comm},
                                                  {"optimizer step", s.optimizer},
                                                  {"offload", s.offload},
                                                  {"the core's loss sum", s.core_comm}};
  for (const auto& [what, t] : rows) {
    std::printf("  %-36s %10.3f %5.1f%%\n", what, t * 1e3, 100.0 * t / s.total());
  }
  std::printf("  %-36s %10.3f\n", "total", s.total() * 1e3);
  std::printf("%.0f tokens per step; %s tokens/s per accelerator; MFU %.1f%%\n", p.tokens_per_step,
              rate_text(p.tokens_per_s_per_gpu).c_str(), 100.0 * p.mfu);
}

}  // namespace

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


namespace {

// A reason with its figures blanked, so that refusals of one kind count together.
std::string reason_kind(const std::string& reason) {
  std::string kind;
  for (char ch : reason) {
    const bool digit = ch >= '0' && ch <= '9';
    if ((digit || ch == '.') && !kind.empty() && kind.back() == '#') continue;
    kind += digit ? '#' : ch;
  }
  return kind;
}

struct ReasonGroup {
  int64_t count = 0;
  std::string example;
};

// The commonest reasons first.
std::vector<std::pair<std::string, ReasonGroup>> reasons(const PlanSearchResult& r) {
  std::map<std::string, ReasonGroup> groups;
  for (const PlanOutcome& o : r.refused) {
    ReasonGroup& g = groups[reason_kind(o.refused)];
    if (g.count++ == 0) g.example = o.refused;
  }
  std::vector<std::pair<std::string, ReasonGroup>> sorted(groups.begin(), groups.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second.count > b.second.count; });
  return sorted;
}

// Refused for memory: every check passed, the prediction did not fit.
int64_t out_of_memory(const PlanSearchResult& r) {
  int64_t n = 0;
  for (const PlanOutcome& o : r.refused) n += o.prediction.has_value() ? 1 : 0;
  return n;
}

std::string model_words(const ModelSpec& m) { return concat(m.family, " ", m.size); }

}  // namespace

nlohmann::ordered_json search_json(const PlanSearchResult& r, const Hardware& hw, int64_t gpus, int64_t top) {
  nlohmann::ordered_json plans = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < r.fitting.size() && static_cast<int64_t>(i) < top; ++i) {
    nlohmann::ordered_json one = prediction_json(*r.fitting[i].prediction, hw, "");
    one.erase("config");
    one["plugins"] = r.fitting[i].candidate.plugins;
    one["sets"] = r.fitting[i].candidate.sets;
    plans.push_back(std::move(one));
  }
  nlohmann::ordered_json set_aside = nlohmann::ordered_json::array();
  for (const auto& [kind, group] : reasons(r)) set_aside.push_back({{"count", group.count}, {"example", group.example}});
  const int64_t oom = out_of_memory(r);
  return {{"model", model_words(r.model)},
          {"hardware", hw.id},
          {"gpus", gpus},
          {"candidates", r.candidates},
          {"seconds", r.seconds},
          {"fitting", r.fitting.size()},
          {"out_of_memory", oom},
          {"refused", static_cast<int64_t>(r.refused.size()) - oom},
          {"plans", plans},
          {"set_aside", set_aside}};
}

void print_search(const PlanSearchResult& r, const Hardware& hw, int64_t gpus, int64_t top) {
  const auto oom = static_cast<long long>(out_of_memory(r));
  std::printf("%s on %lld x %s (%s)\n", model_words(r.model).c_str(), static_cast<long long>(gpus), hw.id.c_str(),
              hw.name.c_str());
  std::printf("%lld candidates in %.1f s: %zu fit, %lld do not fit in memory, %lld refused by a check\n",
              static_cast<long long>(r.candidates), r.seconds, r.fitting.size(), oom,
              static_cast<long long>(r.refused.size()) - oom);
  if (!r.fitting.empty()) {
    std::printf("\n%3s %12s %6s %9s %10s %13s %8s  %s\n", "#", "tokens/s/GPU", "MFU", "step (s)", "memory",
                "dp x pp x tp", "mb x m", "plugins");
  }
  // Plans the model cannot tell apart (the same step time and memory) share a rank: an order
  // among them would be the search's, not a prediction.
  std::size_t shown_rank = 0;
  bool tied = false;
  for (std::size_t i = 0; i < r.fitting.size() && static_cast<int64_t>(i) < top; ++i) {
    const ConfigPrediction& p = *r.fitting[i].prediction;
    const PlanCandidate& c = r.fitting[i].candidate;
    const bool ties_previous = i > 0 && p.phases.total() == r.fitting[i - 1].prediction->phases.total() &&
                               p.ranks[p.busiest].device() ==
                                   r.fitting[i - 1].prediction->ranks[r.fitting[i - 1].prediction->busiest].device();
    if (!ties_previous) shown_rank = i + 1;
    tied = tied || ties_previous;
    std::printf("%3zu %12s %5.1f%% %9s %10s %13s %8s  %s\n", shown_rank, rate_text(p.tokens_per_s_per_gpu).c_str(), 100.0 * p.mfu,
                step_seconds(p.phases.total()).c_str(), human_bytes(p.ranks[p.busiest].device()).c_str(),
                concat(c.dp, " x ", c.pp, " x ", c.tp).c_str(), concat(c.micro_batch, " x ", c.grad_accum).c_str(),
                c.plugins.c_str());
  }
  if (tied) std::printf("(plans of one rank have the same predicted step time and memory: the model cannot order them)\n");
  if (!r.fitting.empty()) {
    std::printf("\nthe best, phase by phase:\n");
    print_prediction(*r.fitting.front().prediction, hw, "plan 1");
  }
  const auto groups = reasons(r);
  if (!groups.empty()) std::printf("\nset aside, the commonest reasons first:\n");
  for (std::size_t i = 0; i < groups.size() && i < 5; ++i) {
    std::printf("%8lld x  %s\n", static_cast<long long>(groups[i].second.count), groups[i].second.example.c_str());
  }
}



nlohmann::ordered_json cost_json(const RunCost& c) {
  nlohmann::ordered_json j = {{"tokens", c.tokens},
                              {"steps", c.steps},
                              {"training_hours", c.training_hours},
                              {"save_seconds", c.save_seconds},
                              {"save_interval_hours", c.save_interval_hours},
                              {"interruptions", c.interruptions},
                              {"wall_hours", c.wall_hours},
                              {"wall_days", c.wall_hours / 24.0},
                              {"gpu_hours", c.gpu_hours},
                              {"currency", c.currency}};
  if (c.on_demand) j["on_demand"] = *c.on_demand;
  if (c.reserved) j["reserved"] = *c.reserved;
  return j;
}

void print_cost(const RunCost& c, const std::string& plan) {
  std::printf("\n%.3g tokens with %s: %s steps, %s days (%s of them the steps; a save of %s s every %s h; "
              "about %s interruptions, each its restart and half an interval trained again); %s accelerator-hours",
              c.tokens, plan.c_str(), figure(c.steps).c_str(), figure(c.wall_hours / 24.0).c_str(),
              figure(c.training_hours / 24.0).c_str(), figure(c.save_seconds).c_str(),
              figure(c.save_interval_hours).c_str(), figure(c.interruptions).c_str(), figure(c.gpu_hours).c_str());
  if (c.on_demand) std::printf("; %s %s on demand", figure(*c.on_demand).c_str(), c.currency.c_str());
  if (c.reserved) std::printf(", %s %s reserved", figure(*c.reserved).c_str(), c.currency.c_str());
  std::printf("\n");
}

nlohmann::ordered_json scale_json(const std::vector<ScaleRow>& rows, const Hardware& hw) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const ScaleRow& row : rows) {
    nlohmann::ordered_json j = {{"gpus", row.gpus}, {"candidates", row.candidates}};
    if (row.best) {
      j["best"] = prediction_json(*row.best->prediction, hw, "");
      j["best"].erase("config");
      j["best"]["plugins"] = row.best->candidate.plugins;
    }
    if (row.cost) j["cost"] = cost_json(*row.cost);
    out.push_back(std::move(j));
  }
  return out;
}

void print_scale(const std::vector<ScaleRow>& rows) {
  std::printf("\nthe best plan by accelerator count:\n%8s %12s %6s %13s %8s %10s %14s  %s\n", "GPUs", "tokens/s/GPU",
              "MFU", "dp x pp x tp", "mb x m", "days", "cost", "plugins");
  for (const ScaleRow& row : rows) {
    if (!row.best) {
      std::printf("%8lld  no plan fits (of %lld candidates)\n", static_cast<long long>(row.gpus),
                  static_cast<long long>(row.candidates));
      continue;
    }
    const ConfigPrediction& p = *row.best->prediction;
    const PlanCandidate& c = row.best->candidate;
    const std::string days = row.cost ? figure(row.cost->wall_hours / 24.0) : "-";
    const std::string cost =
        row.cost && row.cost->on_demand ? concat(figure(*row.cost->on_demand), " ", row.cost->currency) : "-";
    std::printf("%8lld %12s %5.1f%% %13s %8s %10s %14s  %s\n", static_cast<long long>(row.gpus),
                rate_text(p.tokens_per_s_per_gpu).c_str(), 100.0 * p.mfu, concat(c.dp, " x ", c.pp, " x ", c.tp).c_str(),
                concat(c.micro_batch, " x ", c.grad_accum).c_str(), days.c_str(), cost.c_str(), c.plugins.c_str());
  }
}

namespace {

struct SideBySide {
  std::string what;
  double predicted, measured;  // ms, or bytes, or tokens/s
};

double measured_phase(const MeasuredRun& m, const std::string& name) {
  const auto it = m.phase_ms.find(name);
  return it == m.phase_ms.end() ? 0.0 : it->second;
}

std::vector<SideBySide> phase_rows(const ConfigPrediction& p, const MeasuredRun& m) {
  const StepPhases& s = p.phases;
  auto got = [&](std::initializer_list<const char*> names) {
    double sum = 0;
    for (const char* n : names) sum += measured_phase(m, n);
    return sum;
  };
  // A run's forward and backward include what the collectives beside them take.
  return {{"compute (products, kernels, dp comm beside)", 1e3 * (s.compute + s.memory_bound + s.dp_comm_beside),
           got({"forward", "backward"})},
          {"tensor parallel comm (exposed)", 1e3 * s.tp_comm, got({"comm.tp"})},
          {"pipeline sends and idle", 1e3 * (s.pp_comm + s.bubble), got({"comm.pp", "pipeline_idle"})},
          {"data parallel comm (exposed)", 1e3 * s.dp_comm, got({"comm.dp"})},
          {"optimizer and offload", 1e3 * (s.optimizer + s.offload), got({"optimizer"})},
          {"other (data, metrics, saves, the core's)", 1e3 * s.core_comm,
           got({"data", "metrics", "checkpoint", "other", "comm.other"})},
          {"step", 1e3 * s.total(), m.step_ms}};
}

std::vector<SideBySide> memory_rows(const ConfigPrediction& p, const MeasuredRun& m) {
  const RankMemory& r = p.ranks.front();
  auto d = [](int64_t b) { return static_cast<double>(b); };
  return {{"parameters", d(r.state.params), d(m.param_bytes)},
          {"gradients", d(r.state.grads), d(m.grad_bytes)},
          {"optimizer state", d(r.state.optimizer), d(m.optimizer_bytes)},
          {"activations held", d(r.activations), d(m.activation_bytes)},
          {"peak (the predicted total)", d(r.device()), d(m.peak_mem_bytes)}};
}

nlohmann::ordered_json rows_json(const std::vector<SideBySide>& rows) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const SideBySide& r : rows) out[r.what] = {{"predicted", r.predicted}, {"measured", r.measured}};
  return out;
}

std::string ratio(double measured, double predicted) {
  if (predicted <= 0) return "-";
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f", measured / predicted);
  return text;
}

}  // namespace

nlohmann::ordered_json against_json(const ConfigPrediction& p, const Hardware& hw, const MeasuredRun& m) {
  nlohmann::ordered_json warnings = nlohmann::ordered_json::array();
  if (const std::string w = measured_elsewhere(hw, {m.device}); !w.empty()) warnings.push_back(w);
  return {{"run", m.folder},
          {"device", m.device},
          {"warnings", warnings},
          {"steps", m.steps},
          {"phases_ms", rows_json(phase_rows(p, m))},
          {"rank_0_bytes", rows_json(memory_rows(p, m))},
          {"tokens_per_s_per_gpu",
           {{"predicted", p.tokens_per_s_per_gpu}, {"measured", m.tokens_per_s / static_cast<double>(p.gpus())}}}};
}

void print_against(const ConfigPrediction& p, const Hardware& hw, const MeasuredRun& m) {
  std::printf("\nagainst %s (the median of %lld steps), rank 0:\n", m.folder.c_str(), static_cast<long long>(m.steps));
  if (const std::string w = measured_elsewhere(hw, {m.device}); !w.empty()) std::printf("warning: %s\n", w.c_str());
  std::printf("%-44s %12s %12s %9s\n", "phase", "predicted", "measured", "ratio");
  for (const SideBySide& r : phase_rows(p, m)) {
    std::printf("%-44s %9.3f ms %9.3f ms %9s\n", r.what.c_str(), r.predicted, r.measured,
                ratio(r.measured, r.predicted).c_str());
  }
  for (const SideBySide& r : memory_rows(p, m)) {
    std::printf("%-44s %12s %12s %9s\n", r.what.c_str(), human_bytes(static_cast<int64_t>(r.predicted)).c_str(),
                human_bytes(static_cast<int64_t>(r.measured)).c_str(), ratio(r.measured, r.predicted).c_str());
  }
  const double measured = m.tokens_per_s / static_cast<double>(p.gpus());
  std::printf("%-44s %12s %12s %9s\n", "tokens/s per accelerator", rate_text(p.tokens_per_s_per_gpu).c_str(),
              rate_text(measured).c_str(),
              ratio(measured, p.tokens_per_s_per_gpu).c_str());
}

}  // namespace plait::cli
