#include <unistd.h>

#include <chrono>
#include <filesystem>

#include <boost/dll/runtime_symbol_info.hpp>
#include <torch/headeronly/version.h>

#include "cli/run_modes.hpp"
#include "debug/fault_plan.hpp"
#include "debug/flight_summary.hpp"
#include "distributed/rendezvous.hpp"
#include "distributed/supervisor.hpp"
#include "log/logging.hpp"
#include "run/run_folder.hpp"
#include "run/run_status.hpp"

namespace plait::cli {
namespace fs = std::filesystem;
namespace {

// This node's ranks: each runs the config as given (so that what it refuses names the
// user's lines, not the lock file's) into the run folder, with its place in the job; the
// ranks compare their resolved configs before they train.
SupervisorSpec rank_processes(const PreparedRun& prep, const LaunchPlan& launch, const RunArgs& args,
                              const JobStore& store, const std::string& master_addr) {
  const std::string folder = fs::absolute(launch.folder).lexically_normal().string();
  SupervisorSpec spec;
  spec.executable = boost::dll::program_location().string();
  spec.args = {"run", fs::absolute(args.config).string(), "--out", folder};
  for (const auto& s : args.overrides()) {
    spec.args.push_back("--set");
    spec.args.push_back(s);
  }
  if (args.verbose) spec.args.push_back("--verbose");
  spec.run_dir = launch.folder;
  spec.node = concat("node ", launch.node_rank, " of ", launch.nnodes);
  spec.console_rank = 0;
  for (int local = 0; local < launch.nproc; ++local) {
    const WorkerEnv w{.rank = launch.node_rank * launch.nproc + local,
                      .world_size = static_cast<int>(prep.world_size),
                      .local_rank = local,
                      .local_world_size = launch.nproc,
                      .master_addr = master_addr,
                      .master_port = store.port(),
                      .job_id = store.job_id(),
                      .run_dir = folder};
    auto env = worker_environment(w);
    env["PLAIT_LAUNCHER_PID"] = std::to_string(::getpid());
    spec.ranks.push_back({w.rank, local, env});
  }
  return spec;
}

// Node 0's launcher hosts the store: it closes it only once every other launcher is done with it.
void close_store_last(JobStore& store, const LaunchPlan& launch, std::chrono::milliseconds wait) {
  if (launch.node_rank != 0) return report_launcher_end(store, launch.node_rank);
  const std::vector<int> missing = await_launcher_ends(store, launch.nnodes, wait);
  if (missing.empty()) return;
  std::string nodes;
  for (int n : missing) nodes += (nodes.empty() ? "" : ", ") + std::to_string(n);
  core_log().warn("the launchers of nodes ", nodes, " did not report their end within ", wait.count() / 1000.0,
                  " s; closing the job's store anyway (see their output)");
}

}  // namespace

int run_launcher(PreparedRun& prep, const LaunchPlan& launch, const RunArgs& args) {
  warn_on_lock_drift(prep);
  launch.reuse_folder ? reuse_run_folder(launch.folder, launch.resume_step) : create_run_folder(launch.folder);
  configure_logging((fs::path(launch.folder) / "launcher.log").string(), args.verbose);
  write_lock(prep, launch.folder);
  RunStatus status(launch.folder, prep.config->train().steps);
  status.running(0);
  core_log().info("plait ", PLAIT_VERSION, " (LibTorch ", TORCH_VERSION, "): ", args.config, " -> ", launch.folder, "; ",
                  prep.world_size, " ranks (dp ", prep.mesh.dp, " x pp ", prep.mesh.pp, " x tp ", prep.mesh.tp, "), ",
                  launch.nproc, " on node ", launch.node_rank, " of ", launch.nnodes);
  for (const auto& f : configured_faults(prep.config->debug().faults, "[debug] faults")) {
    core_log().warn("this run injects a fault on purpose: '", f.text, "' (", f.place, ")");
  }
  const std::string master_addr = args.master_addr.value_or("127.0.0.1");
  std::unique_ptr<JobStore> store;
  try {
    store = launch.node_rank == 0
                ? JobStore::host(args.master_port.value_or(0), new_job_id(), prep.dist.rendezvous_timeout)
                : JobStore::connect(master_addr, *args.master_port, /*adopt the job id*/ "", prep.dist.rendezvous_timeout,
                                    concat("the launcher of node ", launch.node_rank));
  } catch (const std::exception& e) {
    status.failed(e.what());
    throw;
  }
  StoreAbortChannel abort(*store, static_cast<int>(prep.world_size));
  SupervisorSpec spec = rank_processes(prep, launch, args, *store, master_addr);
  spec.abort = &abort;
  const auto start = std::chrono::steady_clock::now();
  try {
    supervise(spec, core_log());
  } catch (const std::exception& failure) {
    // Every rank has stopped and written what it could: their flight records name the culprit.
    const std::string flight = summarise_flight(launch.folder, static_cast<int>(prep.world_size));
    const auto* plait_error = dynamic_cast<const Error*>(&failure);
    const Error e(flight.empty() ? failure.what() : concat(failure.what(), "\n", flight),
                  plait_error ? plait_error->hint() : "", plait_error ? plait_error->origin() : "");
    write_log_files(LogLevel::error, e.what());
    status.failed(e.what());
    try {
      close_store_last(*store, launch, spec.grace + std::chrono::seconds(2));  // the others are stopping too
    } catch (const std::exception&) {
      // The store may be gone already (node 0 failed first); the failure above is the news.
    }
    flush_logs();
    throw e;
  }
  close_store_last(*store, launch, prep.dist.rendezvous_timeout);
  status.finished();
  if (launch.node_rank == 0) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    core_log().info(summary_from_metrics(launch.folder, seconds), "; run folder ", launch.folder);
  }
  flush_logs();
  return 0;
}

}  // namespace plait::cli
