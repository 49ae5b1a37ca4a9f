#include <chrono>
#include <filesystem>

#include <torch/headeronly/version.h>

#include "cli/run_modes.hpp"
#include "log/logging.hpp"
#include "run/run_folder.hpp"
#include "run/run_status.hpp"

namespace plait::cli {
namespace fs = std::filesystem;

// One process: it makes the run folder, keeps the status and trains.
int run_single(PreparedRun& prep, const LaunchPlan& launch, const RunArgs& args) {
  warn_on_lock_drift(prep);
  // Every check has passed: only now does anything get written.
  const std::string& folder = launch.folder;
  launch.reuse_folder ? reuse_run_folder(folder, launch.resume_step) : create_run_folder(folder);
  configure_logging((fs::path(folder) / "run.log").string(), args.verbose);  // one process: one log
  write_lock(prep, folder);
  RunStatus status(folder, prep.config->train().steps);
  status.running(0);
  core_log().info("plait ", PLAIT_VERSION, " (LibTorch ", TORCH_VERSION, "): ", args.config, " -> ", folder);
  auto world = World::single();
  const auto start = std::chrono::steady_clock::now();
  try {
    train_logged(run_plan(prep, folder, world.get(), &status));
  } catch (const std::exception& e) {
    status.failed(e.what());
    throw;
  }
  status.finished();
  core_log().info(summary_from_metrics(folder, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()),
                  "; run folder ", folder);
  flush_logs();
  return 0;
}

}  // namespace plait::cli
