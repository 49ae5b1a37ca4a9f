#include "train/trainer.hpp"

#include <algorithm>
#include <filesystem>
#include <thread>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "checkpoint/checkpoint_location.hpp"
#include "data/make_sampler.hpp"
#include "debug/exception_text.hpp"
#include "distributed/core_binding.hpp"
#include "io/safetensors.hpp"
#include "log/logging.hpp"
#include "memory/freed_memory.hpp"
#include "memory/rank_memory.hpp"
#include "model/attention_core.hpp"
#include "output/stop_notice.hpp"
#include "timing/event_marks.hpp"
#include "timing/phase_clock.hpp"
#include "train/checkpoint_saver.hpp"
#include "train/debug_dumps.hpp"
#include "train/nonfinite_guard.hpp"
#include "train/reproducible_math.hpp"
#include "train/rank.hpp"
#include "train/resume.hpp"
#include "train/step_report.hpp"
#include "train/step_tracer.hpp"
#include "train/train_step.hpp"

namespace plait {
namespace {

// More compute threads than the cores they run on preempt each other in every step.
void warn_on_more_threads_than_cores(const RunPlan& plan) {
  const int64_t threads = plan.config->train().threads;
  const bool bound = plan.bound_cores > 0;
  const int64_t cores = bound ? plan.bound_cores : static_cast<int64_t>(usable_cores().size());
  const int64_t asked = bound ? threads : threads * plan.local_world_size;
  if (plan.local_rank != 0 || cores <= 0 || asked <= cores) return;
  const std::string on = bound ? concat("per rank on its ", cores, " bound cores")
                                : concat("on this node's ", cores, " usable cores (", plan.local_world_size,
                                         plan.local_world_size == 1 ? " rank)" : " ranks)");
  core_log().warn(plan.config->table("train").where("threads"), ": [train] threads = ", threads, " asks for ", asked,
                  " compute threads ", on, ": they preempt each other every step; threads = 0 shares the cores among the ranks");
}

// Threads, the memory books and budget, determinism and the global seed of this process.
void configure_process(const RunPlan& plan) {
  const TrainSettings& train = plan.config->train();
  install_tracking_allocator();
  set_device_memory_limit(static_cast<int64_t>(train.memory_limit_mb * 1024 * 1024));
  keep_freed_memory(train.cache_freed_blocks);
  int threads = at::get_num_threads();
  if (train.threads > 0) {
    threads = static_cast<int>(train.threads);
    warn_on_more_threads_than_cores(plan);
  } else if (plan.bound_cores > 0) {
    threads = plan.bound_cores;
  } else if (plan.local_world_size > 1) {  // share the machine's cores among its ranks
    threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / plan.local_world_size);
  }
  fix_cpu_math(threads);
  at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/true);
  // Deterministic algorithms, but not their NaN fill of every new tensor: a write pass
  // over each allocation (a 124M ZeRO-3 rank's gathered groups: 84% of its page faults in
  // a step) against reading memory never written, which the equivalence checks catch.
  at::globalContext().setDeterministicFillUninitializedMemory(false);
  at::manual_seed(static_cast<uint64_t>(train.seed));
}

// Collective over tp and pp; rank 0 writes.
void save_weights(const RunPlan& plan, const Rank& rank, const std::string& file) {
  const NamedTensors weights = gather_whole(plan, rank, rank.dp.plugin->full_parameters());
  if (plan.world->rank() == 0) save_safetensors((std::filesystem::path(plan.out_dir) / file).string(), weights);
}

void log_start(const RunPlan& plan, const Rank& rank) {
  const Options& data = plan.config->table("data");
  core_log().info("model ", plan.model.family, " ", plan.model.size, ": ", closed_form_params(plan.model),
                  " parameters; data ", plan.config->data().source, ", B=", plan.config->data().micro_batch_size,
                  " T=", resolve_seq_len(data, plan.model), " grad_accum=",
                  plan.config->train().grad_accum, "; strategy ", rank.dp.context->plugin_name,
                  "; rank ", plan.world->rank(), " of ", plan.world->size(), "; CPU math: ", cpu_math_summary());
  if (plan.model.attention == "sdpa") {
    // Asked of one sample's heads in the dtype attention sees (bf16 under autocast).
    const int64_t T = resolve_seq_len(data, plan.model), d = plan.model.n_embd / plan.model.n_head;
    const at::ScalarType dtype = rank.precision.autocast_bf16 ? at::kBFloat16 : rank.precision.param_dtype;
    const at::Tensor q = at::empty({1, plan.model.n_head, T, d}, at::TensorOptions().dtype(dtype).device(rank.device));
    const LogLevel level = rank.device.is_cpu() ? LogLevel::debug : LogLevel::info;
    core_log().write(level, concat("attention: scaled_dot_product_attention runs its ", sdpa_kernel(q, q, q), " kernel on ",
                   rank.device.str(), " (", c10::toString(dtype), ", T=", T, ", head size ", d, ")"));
  }
}

// A resumed run: the plugins' state, the data position and the step counts of the checkpoint.
TrainingProgress resume(const RunPlan& plan, Rank& rank, StepRunner& runner, NonFiniteGuard& guard) {
  const auto from = resume_point(plan);
  if (!from) return {};
  const Resumed resumed = load_checkpoint(plan, rank, *from);
  runner.restore_data(resumed.data);
  guard.resume(resumed.progress.updates, resumed.progress.skipped);
  return resumed.progress;
}

RunSummary train(const RunPlan& plan) {
  configure_process(plan);
  const std::unique_ptr<Rank> rank = build_rank(plan);
  if (plan.config->checkpoint().save_init) save_weights(plan, *rank, "init.safetensors");
  log_start(plan, *rank);
  DebugDumps dumps(plan, *rank);
  StepRunner runner(plan, *rank, dumps);
  NonFiniteGuard guard(plan);
  TrainingProgress progress = resume(plan, *rank, runner, guard);
  CheckpointSaver saver(plan, *rank);
  StepReporter report(plan, *rank, progress.step + 1);
  StepTracer tracer(plan);
  RunSummary summary;
  const auto start = std::chrono::steady_clock::now();
  const int64_t steps = plan.config->train().steps;
  PhaseClock clock(event_marker_for(rank->device));  // consecutive steps' intervals touch: a save or a report is in the next step's time
  if (plan.config->train().phase_timing) clock.install();
  for (int64_t step = progress.step + 1; step <= steps; ++step) {
    // A stop signal's thread is saying how the run ended, at the last step that ended:
    // no step may follow it (it ends the process).
    yield_to_stop_notice();
    reset_rank_memory_peak(rank->device);
    plan.world->flight().set_step(step);
    tracer.before(step);
    StepOutcome out = runner.run(step, guard.updates(), [&] { saver.before_update(); });
    out.time = clock.lap();
    {
      const PhaseScope timed(Phase::metrics);
      report.after_step(step, out, guard.skipped() + (out.result.applied ? 0 : 1));
    }
    tracer.after(step);
    guard.after_step(step, out);
    summary.losses.push_back(out.loss);
    progress = {.step = step,
                .updates = guard.updates(),
                .skipped = guard.skipped(),
                .samples = progress.samples + runner.samples_per_step(),
                .tokens = progress.tokens + out.tokens};
    if (saver.due(step)) {
      const PhaseScope timed(Phase::checkpoint);
      saver.save(progress, runner.data_state());
    }
  }
  saver.finish();
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (plan.config->checkpoint().save_final) save_weights(plan, *rank, "final.safetensors");
  return summary;
}

}  // namespace

// Whatever fails in training ends the run with one sentence of plait's: an allocation
// refused for the memory budget (autograd may rethrow it wrapped) names the rank, the
// strategy and what to change; any other foreign exception is put in words around its
// first line.
RunSummary run_training(const RunPlan& plan) {
  try {
    return train(plan);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    const std::string what = exception_first_line(e);
    const ParallelSettings& parallel = plan.config->parallel();
    if (device_memory_limit_hit()) {
      throw Error(concat("rank ", plan.world->rank(), " ran out of its device memory budget under data plugin '",
                         parallel.data, "' (offload '", parallel.offload,
                         "'): ", what),
                  "shard the model state (parallel.data = \"zero\" with zero.stage = 3, or \"fsdp\"; add "
                  "parallel.offload = \"cpu\"), lower data.micro_batch_size, or raise train.memory_limit_mb");
    }
    throw Error(concat("rank ", plan.world->rank(), " failed while training (data plugin '",
                       parallel.data, "'): ", dynamic_cast<const c10::Error*>(&e) ? "LibTorch: " : "", what),
                "rerun with -v for the full log; if the config is valid, this is a plait bug: please report it with "
                "the run folder's logs");
  }
}

}  // namespace plait
