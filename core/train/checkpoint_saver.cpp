#include "train/checkpoint_saver.hpp"

#include <chrono>
#include <cstdio>
#include <string>
#include <utility>

#include <torch/headeronly/version.h>

#include <ATen/ATen.h>

#include "checkpoint/checkpoint_files.hpp"
#include "train/frozen_parameters.hpp"
#include "checkpoint/checkpoint_location.hpp"
#include "checkpoint/state_parts.hpp"
#include "debug/fault_injector.hpp"
#include "debug/plugin_call.hpp"
#include "distributed/supervisor.hpp"
#include "io/safetensors.hpp"
#include "log/logging.hpp"
#include "model/hf_format.hpp"
#include "plait/sdk/capabilities.hpp"
#include "util/human_bytes.hpp"
#include "util/short_number.hpp"

namespace plait {
namespace fs = std::filesystem;
namespace {

// A time or a rate as the save lines print it: three significant digits, whole from 1000
// on ("0.0169", "65.6", "1840"): the measurement's own noise is in the fourth.
std::string rounded(double x) {
  char text[32];
  if (x >= 1000) std::snprintf(text, sizeof(text), "%.0f", x);
  else std::snprintf(text, sizeof(text), "%.3g", x);
  return text;
}

}  // namespace

CheckpointSaver::CheckpointSaver(const RunPlan& plan, Rank& rank) : plan_(plan), rank_(rank) {
  const CheckpointSettings& c = plan.config->checkpoint();
  root_ = checkpoint::checkpoint_root(plan.config->table("checkpoint"), plan.out_dir);
  every_ = c.every;
  keep_last_ = c.keep_last;
  async_ = c.async;
  explicit_ = every_ > 0 || !c.final_is_default;
  // Only at its default can `final` meet a plugin that cannot save (the launch refuses the
  // rest): the launch has warned that this run ends without a checkpoint.
  const bool can = plan.registry->find(rank.dp.context->plugin_name)->has_capability(capability::checkpoint);
  final_ = c.final && can;
  if (c.final && !can && plan.world->rank() == 0) {
    core_log().warn("data plugin '", rank.dp.context->plugin_name, "' cannot save checkpoints (it lacks the capability '",
                    capability::checkpoint, "'): this run ends without one (set checkpoint.final = false to say so)");
  }
  last_step_ = plan.config->train().steps;
}

bool CheckpointSaver::due(int64_t step) const {
  return (every_ > 0 && step % every_ == 0) || (final_ && step == last_step_);
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void barrier(World& world, const std::string& what) {
  if (Communicator* all = world.all()) {
    CommOptions o;
    o.tag = {"core", what, "", -1};
    all->barrier(o)->wait();
  }
}

// The run's resolved config goes into the checkpoint, listed with its checksum.
void add_lock_file(const fs::path& run_folder, const fs::path& staging, checkpoint::CheckpointIndex& index) {
  const fs::path lock = run_folder / "config.lock.toml";
  if (!fs::exists(lock)) return;
  fs::copy_file(lock, staging / "config.lock.toml", fs::copy_options::overwrite_existing);
  checkpoint::fsync_path(staging / "config.lock.toml");
  const auto bytes = static_cast<int64_t>(fs::file_size(staging / "config.lock.toml"));
  const std::string sum = checkpoint::file_xxh3(staging / "config.lock.toml");
  index.files["config.lock.toml"] = {bytes, sum, std::max<int64_t>(bytes, 1), sum};
}

}  // namespace

// Ranks on other machines write into the folder rank 0 made: it must be one they share.
// A save the user asked for fails without it; the default final one is skipped, said once.
bool CheckpointSaver::every_rank_sees(const fs::path& staging) {
  World& world = *plan_.world;
  if (world.all() == nullptr) return true;
  at::Tensor missing = at::full({1}, fs::is_directory(staging) ? -1.0 : static_cast<double>(world.rank()),
                                at::TensorOptions().dtype(at::kDouble).device(rank_.device));
  AllReduceOptions o;
  o.op = ReduceOp::max;
  o.tag = {"core", "checkpoint-folder", "", -1};
  world.all()->all_reduce(missing, o)->wait();
  const auto blind = static_cast<int>(missing.item<double>());
  if (blind < 0) return true;
  const std::string what = concat("rank ", blind, " does not see the checkpoint folder ", root_.string(),
                                  " that rank 0 made: checkpoints need a folder every machine of the job shares");
  if (explicit_) throw Error(what, "set [checkpoint] dir to a shared filesystem's folder");
  if (world.rank() == 0) {
    core_log().warn(what, "; this run's final checkpoint is skipped (set [checkpoint] dir to a shared folder)");
    fs::remove_all(staging);
  }
  return false;
}

void CheckpointSaver::save(const TrainingProgress& progress, const std::string& data) {
  finish();
  const auto start = std::chrono::steady_clock::now();
  World& world = *plan_.world;
  Job job{progress, data, root_ / concat(".", checkpoint::step_folder_name(progress.step), ".partial"), {}, start};
  if (world.rank() == 0) checkpoint::begin_staging(root_, progress.step);
  barrier(world, "checkpoint-begin");
  if (!every_rank_sees(job.staging)) return;
  std::vector<StatePart> parts =
      call_plugin(rank_.dp.context->plugin_name, "state_parts", [&] { return rank_.dp.plugin->state_parts(); });
  const Mesh& mesh = world.mesh();
  for (StatePart& p : frozen_state_parts(rank_.stages.model, static_cast<int>(mesh.shape().dp),
                                         static_cast<int>(mesh.coords().dp))) {
    parts.push_back(std::move(p));
  }
  job.parts = checkpoint::owned_parts(parts, rank_.layouts, rank_.dp.context->plugin_name);
  job.prepare_s = seconds_since(start);
  if (!async_) return write(job);
  pending_step_ = job.progress.step;
  pending_prepare_s_ = job.prepare_s;
  std::promise<void> copied;
  copied_ = copied.get_future();
  writer_ = std::thread([this, job = std::move(job), copied = std::move(copied)]() mutable {
    try {
      for (checkpoint::OwnedPart& p : job.parts) {
        if (p.borrowed) p.values = p.values.clone(at::MemoryFormat::Contiguous);
        p.borrowed = false;
      }
      copied.set_value();
      write(job);
    } catch (...) {
      failure_ = std::current_exception();
      try {
        copied.set_value();  // training goes on; the failure is reported at the next save or the end
      } catch (const std::future_error&) {
      }
    }
  });
}

void CheckpointSaver::before_update() {
  if (!copied_.valid()) return;
  const auto start = std::chrono::steady_clock::now();
  copied_.get();
  const double waited = seconds_since(start);
  if (plan_.world->rank() == 0) {
    core_log().info("checkpoint step ", pending_step_, " (async) held up training ", seconds_text(pending_prepare_s_ + waited),
                    ": preparing ", seconds_text(pending_prepare_s_), ", the update waiting for the copy of the state ",
                    seconds_text(waited));
  }
}

void CheckpointSaver::finish() {
  if (copied_.valid()) copied_.get();
  if (writer_.joinable()) writer_.join();
  if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
}

CheckpointSaver::~CheckpointSaver() {
  if (writer_.joinable()) writer_.join();  // a failure here is the run's own failure's echo
}

void CheckpointSaver::write(const Job& job) {
  try {
    write_parts(job);
  } catch (...) {
    // The save failed for every rank (rank 0 cannot commit without each rank's part), and
    // a staging folder is not a checkpoint: nothing of it stays behind. A rank whose folder
    // is already gone failed because another's part failed first: it says so, so that its
    // launcher names the other.
    std::error_code ec;
    const bool abandoned = !fs::exists(job.staging, ec);
    fs::remove_all(job.staging, ec);
    if (abandoned) {
      throw Error(concat("the save of checkpoint step ", job.progress.step, " was abandoned: ", kAnotherRanksPartFailed,
                         " and its staging folder is gone"),
                  "the error of the rank whose part failed says why");
    }
    throw;
  }
}

void CheckpointSaver::write_parts(const Job& job) {
  World& world = *plan_.world;
  const auto start = std::chrono::steady_clock::now();
  const checkpoint::RankShard shard = checkpoint::write_rank_shard(job.staging, world.rank(), job.parts);
  if (world.faults() != nullptr && world.faults()->corrupts(job.progress.step)) {  // [debug] faults: corrupt
    const bool flipped = flip_byte((job.staging / shard.file).string());
    core_log().warn("rank ", world.rank(), ": injected fault: ", flipped ? "flipped a byte of " : "could not flip a byte of ",
                    shard.file, " in the checkpoint of step ", job.progress.step);
  }
  if (world.rank() == 0) return commit(job, shard, seconds_since(start));
  world.store()->set(concat("checkpoint/", job.progress.step, "/rank-", world.rank()), checkpoint::shard_to_json(shard).dump());
}

void CheckpointSaver::commit(const Job& job, const checkpoint::RankShard& own, double write_s) {
  World& world = *plan_.world;
  const auto reports_start = std::chrono::steady_clock::now();
  checkpoint::CheckpointIndex index;
  index.plait_version = PLAIT_VERSION;
  index.libtorch_version = TORCH_VERSION;
  index.step = job.progress.step;
  index.tokens = job.progress.tokens;
  index.samples = job.progress.samples;
  const Mesh& mesh = world.mesh();
  index.mesh = {{"dp", mesh.shape().dp}, {"pp", mesh.shape().pp}, {"tp", mesh.shape().tp}};
  for (const auto& c : plan_.config->plugins()) index.plugins[c.role] = c.name;
  index.state["trainer"] = to_json(job.progress);
  index.state["model"] = model_to_json(plan_.model);
  index.state["data"] = nlohmann::ordered_json::parse(job.data);
  index.state["global_batch"] = {{"dp", mesh.shape().dp},
                                 {"micro_batch_size", plan_.config->data().micro_batch_size},
                                 {"grad_accum", plan_.config->train().grad_accum}};
  checkpoint::merge_shard(index, own);
  // The ranks write about as much as rank 0 did: once its own file is written, the rest
  // get the collective timeout to report theirs.
  const double limit_s = plan_.config->distributed().collective_timeout_s;
  for (int r = 1; r < world.size(); ++r) {
    const std::string report = world.store()->wait_get(
        concat("checkpoint/", job.progress.step, "/rank-", r), std::chrono::milliseconds(static_cast<int64_t>(limit_s * 1e3)),
        concat("rank ", r, "'s part of checkpoint step ", job.progress.step,
               " after rank 0 wrote its own (distributed.collective_timeout_s)"));
    checkpoint::merge_shard(index, checkpoint::shard_from_json(nlohmann::json::parse(report)));
  }
  const double reports_s = seconds_since(reports_start);
  const auto commit_start = std::chrono::steady_clock::now();
  add_lock_file(plan_.out_dir, job.staging, index);
  const fs::path folder = checkpoint::commit(root_, job.staging, index);
  checkpoint::prune(root_, keep_last_);
  int64_t bytes = 0;
  for (const auto& [name, f] : index.files) bytes += f.bytes;
  const double commit_s = seconds_since(commit_start);
  const double seconds = seconds_since(job.started);
  // One process has no other ranks to wait for: its line says only what it did.
  // The phases to two digits ("0.0004 s", not "0.000399 s"): their sum is the total's.
  const std::string others = world.size() > 1 ? concat(", waiting for the other ranks ", seconds_text(reports_s)) : "";
  core_log().info("checkpoint ", folder.string(), ": ", human_bytes(bytes), " in ", index.files.size(), " files, saved in ",
                  rounded(seconds), " s (", rounded(static_cast<double>(bytes) / 1e6 / seconds), " MB/s",
                  async_ ? ", alongside training" : "; training held up for all of it", "): preparing ",
                  seconds_text(job.prepare_s), ", writing ", world.size() > 1 ? "rank 0's file " : "its file ",
                  seconds_text(write_s), others, ", index and commit ", seconds_text(commit_s));
}

}  // namespace plait
