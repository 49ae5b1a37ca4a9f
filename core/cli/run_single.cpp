#include <chrono>
#include <filesystem>

#include <torch/headeronly/version.h>

#include "checkpoint/checkpoint_files.hpp"
#include "checkpoint/checkpoint_location.hpp"
#include "cli/run_modes.hpp"
#include "debug/fault_injector.hpp"
#include "distributed/flight_recorder.hpp"
#include "log/logging.hpp"
#include "run/drill_check.hpp"
#include "output/run_folder.hpp"
#include "output/run_folder_lock.hpp"
#include "output/run_status.hpp"
#include "output/stop_notice.hpp"

namespace plait::cli {
namespace fs = std::filesystem;

// One process: it makes the run folder, keeps the status and trains.
int run_single(PreparedRun& prep, const LaunchPlan& launch, const RunArgs& args) {
  warn_on_lock_drift(prep);
  // Every check has passed: only now does anything get written.
  const std::string& folder = launch.folder;
  const RunFolderLock owned = claim_run_folder(launch.folder, launch.reuse_folder, launch.resume_step);
  if (launch.node_rank == 0) checkpoint::claim_checkpoints(prep.config->table("checkpoint"), launch.folder);
  configure_logging((fs::path(folder) / "run.log").string(), args.verbose);  // one process: one log
  write_lock(prep, folder);
  RunStatus status(folder, prep.config->train().steps);
  status.running(0);
  // Ctrl-C or SIGTERM: a line in run.log and on the console, and a failed status with the last step.
  install_stop_notice({.rank = 0,
                       .who = "plait run",
                       .log_file = (fs::path(folder) / "run.log").string(),
                       .stderr_is_logged = false,
                       .status_folder = folder,
                       .launcher_parent = false,
                       .how_to_continue = [root = checkpoint::checkpoint_root(prep.config->table("checkpoint"), folder),
                                           folder]() -> std::string {
                         const auto newest = checkpoint::complete_checkpoints(root);
                         if (newest.empty()) return "; no checkpoint was saved";
                         return concat("; its newest checkpoint is step ", newest.back().first,
                                       ": continue with plait run --resume ", folder);
                       }});
  install_crash_flight_record();  // a crash names the plugin hook it happened in
  core_log().info("plait ", PLAIT_VERSION, " (LibTorch ", TORCH_VERSION, "): ", args.config, " -> ", folder);
  const std::vector<FaultSpec> injected = configured_faults(*prep.config);
  std::vector<std::string> texts;
  for (const auto& f : injected) {
    core_log().warn("this run injects a fault on purpose: '", f.text, "' (", f.place, ")");
    texts.push_back(f.text);
  }
  status.note_faults(texts);
  for (const auto& why : launch.resume_refused) core_log().warn("resume: passed over checkpoint ", why);
  FaultInjector faults(injected, 0, 0, folder);
  auto world = World::single();
  if (!faults.empty()) world->inject(&faults);
  const auto start = std::chrono::steady_clock::now();
  try {
    RunPlan plan = run_plan(prep, folder, world.get(), &status);
    plan.resume_from = launch.resume.value_or("");
    train_logged(plan);
    check_faults_struck(injected, folder, 0, 1, 1);
  } catch (const std::exception& e) {
    status.failed(e.what());
    throw;
  }
  status.finished();
  core_log().info(summary_from_metrics(folder, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                                       launch.resume_step),
                  "; run folder ", folder);
  flush_logs();
  return 0;
}

}  // namespace plait::cli
