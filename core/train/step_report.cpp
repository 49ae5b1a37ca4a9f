#include "train/step_report.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <utility>

#include <ATen/ATen.h>

#include "data/make_sampler.hpp"
#include "distributed/wire_bytes.hpp"
#include "log/logging.hpp"
#include "memory/rank_memory.hpp"
#include "metrics/progress.hpp"
#include "timing/device_peaks.hpp"
#include "output/run_status.hpp"
#include "train/frozen_parameters.hpp"

namespace plait {

StepReporter::StepReporter(const RunPlan& plan, Rank& rank, int64_t first_step)
    : plan_(plan), rank_(rank), start_(std::chrono::steady_clock::now()) {
  const TrainSettings& train = plan.config->train();
  flops_per_token_ = flops_per_token(plan.model, resolve_seq_len(plan.config->table("data"), plan.model));
  const PeakChoice peak = choose_peak_flops(train);
  peak_flops_ = peak.flops;
  if (peak.known) {
    core_log().info("MFU against ", peak.gpu_model, "'s peak for ", train.dtype, ": ", peak_flops_ / 1e12,
                    " TFLOP/s (", peak.known->source, "); [train] peak_flops sets another");
  } else if (peak.looked_up) {
    core_log().warn("MFU is against [train] peak_flops's default of 1 TFLOP/s: plait does not know this GPU (",
                    peak.gpu_model.empty() ? std::string("no model reported") : peak.gpu_model,
                    "); set [train] peak_flops to its peak for ", train.dtype);
  }
  steps_ = train.steps;
  log_every_ = train.log_every;
  phase_timing_ = train.phase_timing;
  const std::string rank_metrics = train.rank_metrics;
  if (plan.config->debug().count_host_syncs) {
    syncs_.start(rank.device);
    syncs_.take();  // building and resuming are not a step
  }
  count_wire_ = plan.config->debug().count_wire_bytes;
  if (count_wire_) plan.world->stats().count_wire(&tcp_bytes_sent);
  keep_ranks_ = rank_metrics == "all" || (rank_metrics == "auto" && plan.world->size() <= kRanksKeptByDefault);
  if (plan.world->rank() == 0) {
    metrics_ = std::make_unique<MetricsWriter>((std::filesystem::path(plan.out_dir) / "metrics.jsonl").string());
    if (train.tensorboard) {
      tensorboard_ =
          std::make_unique<TensorBoardWriter>((std::filesystem::path(plan.out_dir) / "tb").string(), first_step);
    }
  }
}

namespace {

// Every axis and operation a rank can wait in, so that every rank's figures line up.
constexpr const char* kAxes[] = {"world", "dp", "pp", "tp"};
constexpr const char* kOps[] = {"all_reduce", "reduce_scatter", "all_gather", "broadcast", "send", "recv", "barrier"};

void add_time(RankFigures& figures, const PhaseTimes& t) {
  for (std::size_t p = 0; p < kPhaseCount; ++p) {
    figures.emplace_back(concat("time.", phase_name(static_cast<Phase>(p)), "_ms"), t.seconds[p] * 1e3);
  }
  figures.emplace_back("time.scopes", static_cast<double>(t.scopes));  // what the timing itself cost is per scope
  for (const char* axis : kAxes) {
    for (const char* op : kOps) {
      const std::string key = concat(axis, ".", op);
      const auto it = t.comm_s.find(key);
      figures.emplace_back(concat("time.comm_exposed.", key, "_ms"), it == t.comm_s.end() ? 0.0 : it->second * 1e3);
    }
  }
}

}  // namespace

// This rank's figures of a recorded step: its state, memory, activations, phases and waits.
RankFigures StepReporter::own_figures(const StepOutcome& out, const StateBytes& state, const MemoryStats& mem) const {
  RankFigures mine = {
      {"param_bytes", state.params},           {"grad_bytes", state.grads},
      {"frozen_param_bytes", frozen_bytes(rank_.stages.model)},
      {"optimizer_bytes", state.optimizer},    {"host_param_bytes", state.host_params},
      {"host_grad_bytes", state.host_grads},   {"host_optimizer_bytes", state.host_optimizer},
      {"mem_bytes", mem.current_bytes},        {"host_mem_bytes", mem.host_current_bytes},
      {"peak_mem_bytes", mem.peak_bytes},      {"peak_reserved_mem_bytes", mem.peak_reserved_bytes},
      {"peak_host_mem_bytes", mem.host_peak_bytes},
      {"activation_bytes", out.schedule.activation_bytes},
      {"pipeline_busy_us", std::round(out.schedule.busy_s * 1e6)},
      {"pipeline_span_us", std::round(out.schedule.span_s * 1e6)},
  };
  if (phase_timing_) add_time(mine, out.time);
  if (syncs_.started()) {  // every rank's, since the last record: a plugin may wait on one rank only
    mine.emplace_back("host_syncs", static_cast<double>(std::accumulate(syncs_by_step_.begin(), syncs_by_step_.end(), int64_t{0})));
  }
  return mine;
}

// What rank 0 summarises beside them: the step's time, this rank's own time per step since
// the last record (what the others would wait for: its time less its own waits), its traffic.
RankFigures StepReporter::with_time_and_traffic(RankFigures figures, double step_s, const CommStats::Drained& comm) {
  figures.emplace_back("step_ms", step_s * 1e3);
  double exposed_s = 0.0;
  for (const auto& [op, c] : comm.by_op) exposed_s += c.exposed_seconds;
  figures.emplace_back("own_ms", std::max(0.0, unrecorded_step_s_ - exposed_s) * 1e3 /
                                     static_cast<double>(std::max<int64_t>(1, unrecorded_steps_)));
  unrecorded_step_s_ = 0.0;
  unrecorded_steps_ = 0;
  figures.emplace_back("comm_bytes", comm_bus_bytes(comm));
  if (count_wire_) {  // as the traffic counters, the figures' own gather is the next record's
    figures.emplace_back("wire_bytes", static_cast<double>(comm.wire_bytes));
    figures.emplace_back("wire_bytes_outside_ops", static_cast<double>(comm.wire_bytes - comm.wire_bytes_in_ops));
  }
  return figures;
}

void StepReporter::after_step(int64_t step, const StepOutcome& out, int64_t skipped_steps) {
  if (plan_.status != nullptr) plan_.status->running(step, /*now=*/!out.result.applied);
  reads_by_step_.push_back(rank_.host_reads.take());
  if (syncs_.started()) syncs_by_step_.push_back(syncs_.take());
  unrecorded_step_s_ += out.time.total_s;
  ++unrecorded_steps_;
  if (!is_logged_step(step, log_every_, steps_) && out.result.applied) return;
  const MemoryStats mem = rank_memory(rank_.device);
  const StateBytes state = rank_.dp.plugin->state_bytes();
  const CommStats::Drained comm = plan_.world->stats().drain();
  const double step_s = out.time.total_s;
  const double tokens_per_s = static_cast<double>(out.tokens) / step_s;
  const StepFigures figures{
      .step = step,
      .loss = out.loss,
      .lr = out.lr,
      .grad_norm = out.result.grad_norm,
      .tokens = out.tokens,
      .counted_tokens = out.counted_tokens,
      .step_s = step_s,
      .mfu = flops_per_token_ * tokens_per_s / peak_flops_,
      .skipped = !out.result.applied,
      .skipped_steps = skipped_steps,
      .mem_bytes = mem.current_bytes,
      .host_mem_bytes = mem.host_current_bytes,
  };
  // What each rank holds differs under sharding, and so does its time: rank 0 records
  // its own at the top level, every rank's summarised (and listed, where kept).
  const RankFigures mine = own_figures(out, state, mem);
  const RankFigures with_comm = with_time_and_traffic(mine, step_s, comm);
  nlohmann::ordered_json record = step_record(figures, mine, comm);
  const std::vector<RankFigures> ranks = at_rank_zero(with_comm);
  if (!ranks.empty()) {
    record["ranks_summary"] = rank_summary(ranks);
    if (keep_ranks_) record["ranks"] = rank_records(ranks);
    note_straggler(step, ranks, record);
  }
  for (const auto& [key, value] : rank_.metrics.drain()) record[key] = value;
  reads_by_step_.back() += rank_.host_reads.take();  // the gathered figures
  record["host_reads_by_step"] = reads_by_step_;      // this rank's, every step since the last record
  reads_by_step_.clear();
  if (syncs_.started()) record["host_syncs_by_step"] = std::exchange(syncs_by_step_, {});
  if (metrics_) metrics_->write(record);
  if (tensorboard_) tensorboard_->scalars(step, tensorboard_scalars(record));
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  core_log().info(format_progress({step, steps_, out.loss, out.lr, out.result.grad_norm, step_s * 1e3, tokens_per_s,
                                   figures.mfu, mem.peak_bytes, elapsed}));
}

// Rank 0: the rank that lags, from every rank's own time per step over the last records;
// logged as it starts and stops lagging, and kept in each record while it does.
void StepReporter::note_straggler(int64_t step, const std::vector<RankFigures>& ranks, nlohmann::ordered_json& record) {
  std::vector<double> own;
  for (const auto& figures : ranks) {
    for (const auto& [name, value] : figures) {
      if (name == "own_ms") own.push_back(value);
    }
  }
  const std::optional<Straggler> now = stragglers_.add(own);
  if (now) record["straggler"] = {{"rank", now->rank}, {"own_ms", now->own_ms}, {"median_ms", now->median_ms}};
  if (const std::string line = stragglers_.change(now, step); !line.empty()) core_log().warn(line);
}

// Every rank's figures, on rank 0 only (empty elsewhere), from one all-gather over the
// world group: point-to-point reports to rank 0 would have NCCL connect rank 0 with every
// rank. Nothing is exchanged between the steps that are not recorded, and only rank 0
// reads the figures back to the host. Its bytes are counted in the next record's traffic.
std::vector<RankFigures> StepReporter::at_rank_zero(const RankFigures& mine) {
  std::vector<double> numbers;
  for (const auto& f : mine) numbers.push_back(f.second);
  const auto options = at::TensorOptions().dtype(at::kDouble);
  at::Tensor local = at::tensor(numbers, options);
  at::Tensor all = local;
  Communicator* everyone = plan_.world->all();
  if (everyone != nullptr) {
    CommOptions o;
    o.tag = {"core", "rank-report", "", -1};
    all = at::empty({everyone->size() * local.numel()}, options.device(rank_.device));  // flat, as gloo wants
    everyone->all_gather(all, local.to(rank_.device), o)->wait();
    if (everyone->rank() != 0) return {};
    all = rank_.host_reads.read(all, "rank report");
  }
  all = all.contiguous();
  const auto* values = all.data_ptr<double>();
  std::vector<RankFigures> out(static_cast<std::size_t>(all.numel() / local.numel()));
  for (std::size_t r = 0; r < out.size(); ++r) {
    for (std::size_t i = 0; i < mine.size(); ++i) out[r].emplace_back(mine[i].first, values[r * mine.size() + i]);
  }
  return out;
}

}  // namespace plait
