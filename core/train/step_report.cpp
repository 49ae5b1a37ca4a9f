#include "train/step_report.hpp"

#include <filesystem>

#include <ATen/ATen.h>

#include "data/make_sampler.hpp"
#include "log/logging.hpp"
#include "memory/rank_memory.hpp"
#include "metrics/progress.hpp"
#include "run/run_status.hpp"

namespace plait {

StepReporter::StepReporter(const RunPlan& plan, Rank& rank, int64_t first_step)
    : plan_(plan), rank_(rank), start_(std::chrono::steady_clock::now()) {
  const Options& train = plan.config->table("train");
  flops_per_token_ = flops_per_token(plan.model, resolve_seq_len(plan.config->table("data"), plan.model));
  peak_flops_ = train.get<double>("peak_flops");
  steps_ = train.get<int64_t>("steps");
  log_every_ = train.get<int64_t>("log_every");
  if (plan.world->rank() == 0) {
    metrics_ = std::make_unique<MetricsWriter>((std::filesystem::path(plan.out_dir) / "metrics.jsonl").string());
    if (train.get<bool>("tensorboard")) {
      tensorboard_ =
          std::make_unique<TensorBoardWriter>((std::filesystem::path(plan.out_dir) / "tb").string(), first_step);
    }
  }
}

void StepReporter::after_step(int64_t step, const StepOutcome& out, int64_t skipped_steps) {
  if (plan_.status != nullptr) plan_.status->running(step, /*now=*/!out.result.applied);
  reads_by_step_.push_back(rank_.host_reads.take());
  if (!is_logged_step(step, log_every_, steps_) && out.result.applied) return;
  const MemoryStats mem = rank_memory(rank_.device);
  const StateBytes state = rank_.dp.plugin->state_bytes();
  const CommStats::Drained comm = plan_.world->stats().drain();
  const double tokens_per_s = static_cast<double>(out.tokens) / out.seconds;
  const StepFigures figures{
      .step = step,
      .loss = out.loss,
      .lr = out.lr,
      .grad_norm = out.result.grad_norm,
      .tokens = out.tokens,
      .step_s = out.seconds,
      .mfu = flops_per_token_ * tokens_per_s / peak_flops_,
      .skipped = !out.result.applied,
      .skipped_steps = skipped_steps,
      .mem_bytes = mem.current_bytes,
      .host_mem_bytes = mem.host_current_bytes,
  };
  // What each rank holds differs under sharding: rank 0 records its own, and every
  // rank's under "ranks".
  const RankFigures mine = {
      {"param_bytes", state.params},           {"grad_bytes", state.grads},
      {"optimizer_bytes", state.optimizer},    {"host_param_bytes", state.host_params},
      {"host_grad_bytes", state.host_grads},   {"host_optimizer_bytes", state.host_optimizer},
      {"peak_mem_bytes", mem.peak_bytes},      {"peak_reserved_mem_bytes", mem.peak_reserved_bytes},
      {"peak_host_mem_bytes", mem.host_peak_bytes},
      {"activation_bytes", out.schedule.activation_bytes},
      {"pipeline_busy_us", static_cast<int64_t>(out.schedule.busy_s * 1e6)},
      {"pipeline_span_us", static_cast<int64_t>(out.schedule.span_s * 1e6)},
  };
  RankFigures with_comm = mine;
  with_comm.emplace_back("comm_bytes", static_cast<int64_t>(comm_bus_bytes(comm)));
  nlohmann::ordered_json record = step_record(figures, mine, comm, every_rank(with_comm));
  for (const auto& [key, value] : rank_.metrics.drain()) record[key] = value;
  reads_by_step_.back() += rank_.host_reads.take();  // the gathered figures
  record["host_reads_by_step"] = reads_by_step_;      // this rank's, every step since the last record
  reads_by_step_.clear();
  if (metrics_) metrics_->write(record);
  if (tensorboard_) tensorboard_->scalars(step, tensorboard_scalars(record));
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  core_log().info(format_progress({step, steps_, out.loss, out.lr, out.result.grad_norm, out.seconds * 1e3, tokens_per_s,
                                   figures.mfu, mem.peak_bytes, elapsed}));
}

// Every rank's figures, gathered over all ranks so that rank 0's metrics.jsonl holds
// them. Its few bytes are counted in the next step's traffic.
std::vector<RankFigures> StepReporter::every_rank(const RankFigures& mine) {
  std::vector<int64_t> numbers;
  for (const auto& f : mine) numbers.push_back(f.second);
  at::Tensor local = at::tensor(numbers, at::TensorOptions().dtype(at::kLong)).to(rank_.device);
  at::Tensor all = local;
  if (Communicator* everyone = plan_.world->all()) {
    all = at::empty({local.numel() * everyone->size()}, local.options());
    CommOptions o;
    o.tag = {"core", "rank-report", "", -1};
    everyone->all_gather(all, local, o)->wait();
  }
  all = rank_.host_reads.read(all, "rank report");
  const auto* values = all.data_ptr<int64_t>();
  std::vector<RankFigures> out(static_cast<std::size_t>(all.numel() / local.numel()));
  for (std::size_t r = 0; r < out.size(); ++r) {
    for (std::size_t i = 0; i < mine.size(); ++i) {
      out[r].emplace_back(mine[i].first, values[r * mine.size() + i]);
    }
  }
  return out;
}

}  // namespace plait
