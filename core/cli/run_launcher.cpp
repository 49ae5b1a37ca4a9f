#include <unistd.h>

#include <cstring>

#include <chrono>
#include <filesystem>

#include <boost/dll/runtime_symbol_info.hpp>
#include <torch/headeronly/version.h>

#include "cli/launcher_restarts.hpp"
#include "checkpoint/checkpoint_location.hpp"
#include "cli/run_modes.hpp"
#include "checkpoint/checkpoint_files.hpp"
#include "debug/fault_plan.hpp"
#include "debug/flight_report.hpp"
#include "debug/flight_summary.hpp"
#include "distributed/flight_exchange.hpp"
#include "distributed/job_token.hpp"
#include "distributed/node_heartbeat.hpp"
#include "distributed/rendezvous.hpp"
#include "distributed/supervisor.hpp"
#include "log/logging.hpp"
#include "run/drill_check.hpp"
#include "output/run_folder.hpp"
#include "output/run_folder_lock.hpp"
#include "output/run_status.hpp"

namespace plait::cli {
namespace fs = std::filesystem;
namespace {

// A launcher of another node gives up on node 0's store when one reply takes this long: the
// store answers in milliseconds while node 0 lives and the link holds.
constexpr std::chrono::milliseconds kStoreReplyTimeout{5000};

// This node's ranks: each runs the config as given (so that what it refuses names the
// user's lines, not the lock file's) into the run folder, with its place in the job; the
// ranks compare their resolved configs before they train.
// A restart resumes from the checkpoint its launchers agreed on (`resume_from`; empty: as
// the first start did).
SupervisorSpec rank_processes(const PreparedRun& prep, const LaunchPlan& launch, const RunArgs& args,
                              const JobStore& store, const std::string& master_addr, int attempt,
                              const std::string& resume_from, const std::string& token) {
  const std::string folder = fs::absolute(launch.folder).lexically_normal().string();
  SupervisorSpec spec;
  spec.executable = boost::dll::program_location().string();
  spec.args = {"run", fs::absolute(args.config).string(), "--out", folder};
  for (const auto& s : args.override_argv()) {
    // The checkpoint checked or agreed on replaces the one --resume names (it may be older).
    if (!resume_from.empty() && s.rfind("--resume=", 0) == 0) continue;
    spec.args.push_back(s);
  }
  if (!resume_from.empty()) {
    spec.args.push_back("--set");
    spec.args.push_back("checkpoint.resume_from=" + resume_from);
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
                      .run_dir = folder,
                      .restart = attempt};
    auto env = worker_environment(w);
    env["PLAIT_LAUNCHER_PID"] = std::to_string(::getpid());
    if (!token.empty()) env["PLAIT_JOB_TOKEN"] = token;
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

// Another node's launcher whose store stopped answering (node 0 lost, or the link to it
// cut) waits for it on a new connection, as long as a node may take to join
// (rendezvous_timeout_s): node 0's launcher waits as long for this node's report, and the
// job restarts once the link is back.
std::unique_ptr<JobStore> rejoin_store(const JobStore& lost, const PreparedRun& prep, const LaunchPlan& launch,
                                       const std::string& master_addr, int port, const std::string& token) {
  core_log().warn("node 0's store stopped answering; waiting up to ", prep.dist.rendezvous_timeout.count() / 1000.0,
                  " s for it to answer again, to restart the job");
  auto store = JobStore::connect(master_addr, port, lost.job_id(), prep.dist.rendezvous_timeout,
                                 concat("the launcher of node ", launch.node_rank), token, false, kStoreReplyTimeout);
  core_log().info("node 0's store answers again");
  return store;
}

// The job's token: the user's (PLAIT_JOB_TOKEN, PLAIT_JOB_TOKEN_FILE), else on one node a
// new one; the launchers of several nodes cannot share one they did not get.
std::string job_token(const LaunchPlan& launch) {
  std::string token = job_token_from_env();
  if (token.empty() && launch.nnodes == 1) return new_job_token();
  if (token.empty()) {
    core_log().warn("this job has no token: any process that reaches its store can join it or read its keys; set "
                    "PLAIT_JOB_TOKEN or PLAIT_JOB_TOKEN_FILE to one secret on every node");
  }
  return token;
}

// Several machines: each node's rank files are in its own run folder, so the launchers
// trade their ranks' flight records through the store (flight_exchange.hpp) before they
// report, and every node's paragraph covers every rank.
void post_own_flight(JobStore& store, int attempt, const LaunchPlan& launch, const SupervisorSpec& spec) {
  if (launch.nnodes == 1) return;
  std::vector<int> ranks;
  for (const auto& r : spec.ranks) ranks.push_back(r.rank);
  try {
    post_flight_records(store, attempt, launch.folder, ranks);
  } catch (const std::exception&) {
    // The store is gone with node 0: this node's report covers its own ranks.
  }
}

void gather_flight(JobStore& store, int attempt, const LaunchPlan& launch, const PreparedRun& prep,
                   std::chrono::milliseconds wait) {
  if (launch.nnodes == 1) return;
  try {
    take_flight_records(store, attempt, launch.folder, static_cast<int>(prep.world_size), wait);
  } catch (const std::exception&) {
    // as above
  }
}

// A job that cannot go on: every rank has stopped and written what it could, so their
// flight records name the culprit. `others`: how long the other nodes get to end.
[[noreturn]] void fail_job(const std::exception& failure, const std::string& why_not_restarted, const PreparedRun& prep,
                           const LaunchPlan& launch, JobStore& store, RunStatus& status,
                           std::chrono::milliseconds others) {
  const std::string flight = summarise_flight(launch.folder, static_cast<int>(prep.world_size));
  const auto* plait_error = dynamic_cast<const Error*>(&failure);
  std::string text = failure.what();
  if (!flight.empty()) text += "\n" + flight;
  if (!why_not_restarted.empty()) text += concat("\nnot restarted: ", why_not_restarted);
  const Error e(text, plait_error ? plait_error->hint() : "", plait_error ? plait_error->origin() : "");
  write_log_files(LogLevel::error, e.what());
  status.failed(e.what(), job_steps_ended(launch.folder));
  try {
    close_store_last(store, launch, others);
  } catch (const std::exception&) {
    // The store may be gone already (node 0 failed first); the failure above is the news.
  }
  flush_logs();
  throw e;
}

// A stop the user or a scheduler asked for (Ctrl-C, SIGTERM, on this node or another): no
// failure, no flight paragraph (the ranks were stopped where they were, not stuck there);
// the status says "stopped" at the last step that ended, and the exit code is the shell's
// for that signal (130, 143).
[[nodiscard]] int stop_job(int signal, const PreparedRun& prep, const LaunchPlan& launch, JobStore& store,
                           RunStatus& status, std::chrono::milliseconds others) {
  const int64_t step = job_steps_ended(launch.folder);
  const std::string why = concat("stopped as asked (signal ", signal, ", ", strsignal(signal), ") after step ", step,
                                 " of ", prep.config->train().steps, "; every rank was stopped");
  status.stopped(why, step);
  const auto root = checkpoint::checkpoint_root(prep.config->table("checkpoint"), launch.folder);
  const auto newest = checkpoint::complete_checkpoints(root);
  core_log().warn("plait run ", why,
                  newest.empty() ? std::string("; no checkpoint was saved")
                                 : concat("; its newest checkpoint is step ", newest.back().first,
                                          ": continue with plait run --resume ", launch.folder));
  try {
    close_store_last(store, launch, others);
  } catch (const std::exception&) {
    // node 0's store may be gone; the stop is the news
  }
  flush_logs();
  return 128 + signal;
}

// The run's status and log say what starts: the ranks, the mesh, this node's share, and
// every fault injected on purpose.
void announce_launch(const PreparedRun& prep, const LaunchPlan& launch, const RunArgs& args,
                     const std::vector<FaultSpec>& faults, RunStatus& status) {
  std::vector<std::string> fault_texts;
  for (const auto& f : faults) fault_texts.push_back(f.text);
  status.note_faults(fault_texts);
  status.running(0);
  core_log().info("plait ", PLAIT_VERSION, " (LibTorch ", TORCH_VERSION, "): ", args.config, " -> ", launch.folder, "; ",
                  prep.world_size, " ranks (dp ", prep.mesh.dp, " x pp ", prep.mesh.pp, " x tp ", prep.mesh.tp, "), ",
                  launch.nproc, " on node ", launch.node_rank, " of ", launch.nnodes);
  for (const auto& f : faults) core_log().warn("this run injects a fault on purpose: '", f.text, "' (", f.place, ")");
}

// Node 0 hosts the job's store, the others connect to it; a failure is the run's status.
std::unique_ptr<JobStore> open_job_store(const PreparedRun& prep, const LaunchPlan& launch, const RunArgs& args,
                                         const std::string& master_addr, const std::string& token, RunStatus& status) {
  try {
    return launch.node_rank == 0
               ? JobStore::host(args.master_port.value_or(0), new_job_id(), prep.dist.rendezvous_timeout, token,
                                /*loopback_only=*/launch.nnodes == 1)
               : JobStore::connect(master_addr, *args.master_port, /*adopt the job id*/ "", prep.dist.rendezvous_timeout,
                                   concat("the launcher of node ", launch.node_rank), token, false, kStoreReplyTimeout);
  } catch (const std::exception& e) {
    status.failed(e.what());
    throw;
  }
}

// A drill whose faults did not all strike tested nothing (drill_check.hpp); else the run
// finished, and node 0 says how it went.
void finish_launch(const LaunchPlan& launch, const std::vector<FaultSpec>& faults, int restarts, RunStatus& status,
                   std::chrono::steady_clock::time_point start) {
  try {
    check_faults_struck(faults, launch.folder, launch.node_rank * launch.nproc, launch.nproc, restarts + 1);
  } catch (const Error& e) {
    status.failed(e.what());
    throw;
  }
  status.finished();
  if (launch.node_rank == 0) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    core_log().info(summary_from_metrics(launch.folder, seconds, launch.resume_step), "; run folder ", launch.folder,
                    restarts > 0 ? concat("; restarted ", restarts, " time(s): restarts.json") : "");
  }
  flush_logs();
}

// The checked checkpoint when a damaged newer one was passed over (the ranks would take the
// newest); empty: the ranks' own answer.
std::string first_resume_point(const LaunchPlan& launch) {
  for (const auto& why : launch.resume_refused) core_log().warn("resume: passed over checkpoint ", why);
  return launch.resume_refused.empty() ? "" : launch.resume.value_or("");
}

// After a stop every launcher posts its ranks' flight records, they agree whether to
// restart, and node 0 gathers the records.
RestartDecision decide_after_stop(JobStore& store, int attempt, const LaunchPlan& launch, const PreparedRun& prep,
                                  const SupervisorSpec& spec, const JobStopped& stopped, std::chrono::milliseconds others) {
  post_own_flight(store, attempt, launch, spec);
  RestartDecision decision = agree_on_restart(store, prep, launch, attempt, stopped);
  gather_flight(store, attempt, launch, prep, others);
  return decision;
}

// A restart decided: the flight records' summary in the log, and restarts.json's entry
// with the culprit and the step reached, from this attempt's records before they are kept apart.
void record_restart(RestartBook& restarts, const RestartDecision& decision, const LaunchPlan& launch, int world_size,
                    int attempt) {
  const std::string flight = summarise_flight(launch.folder, world_size);
  if (!flight.empty()) core_log().warn(flight);
  restarts.restarting(decision, analyse_flight(read_flight_records(launch.folder), world_size).culprit);
  restarts.keep_flight_records(attempt);
}

}  // namespace

int run_launcher(PreparedRun& prep, const LaunchPlan& launch, const RunArgs& args) {
  warn_on_lock_drift(prep);
  const std::string token = job_token(launch);  // a bad token file is refused before the run folder exists
  const RunFolderLock owned = claim_run_folder(launch.folder, launch.reuse_folder, launch.resume_step);
  if (launch.node_rank == 0) checkpoint::claim_checkpoints(prep.config->table("checkpoint"), launch.folder);
  configure_logging((fs::path(launch.folder) / "launcher.log").string(), args.verbose);
  write_lock(prep, launch.folder);
  RunStatus status(launch.folder, prep.config->train().steps);
  const std::vector<FaultSpec> faults = configured_faults(*prep.config);
  announce_launch(prep, launch, args, faults, status);
  // One node: its ranks reach the store over loopback, the only interface it listens on.
  const std::string master_addr = launch.nnodes == 1 ? "127.0.0.1" : args.master_addr.value_or("127.0.0.1");
  std::unique_ptr<JobStore> store = open_job_store(prep, launch, args, master_addr, token, status);
  auto heartbeat = std::make_unique<NodeHeartbeat>(*store, launch.node_rank, launch.nnodes);
  RestartBook restarts(launch.folder, launch.node_rank, status);
  const auto start = std::chrono::steady_clock::now();
  std::string resume_from = first_resume_point(launch);
  for (int attempt = 0;; ++attempt) {
    heartbeat->forgive();
    const std::unique_ptr<JobStore> job = store->view(attempt_job_id(store->job_id(), attempt));
    StoreAbortChannel abort(*job, static_cast<int>(prep.world_size), heartbeat.get());
    SupervisorSpec spec = rank_processes(prep, launch, args, *job, master_addr, attempt, resume_from, token);
    spec.abort = &abort;
    spec.on_stopping = [&](const std::string& why) { status.stopping(why); };
    if (attempt > 0) spec.on_tick = [&] { restarts.poll_first_step(*job); };
    try {
      restarts.started();
      supervise(spec, core_log());
      // A job that ends between two supervisor ticks has not had its first step timed yet.
      if (attempt > 0) restarts.poll_first_step(*job);
      break;
    } catch (const JobStopped& stopped) {
      // The others are stopping too, and get the time to say so; a node already lost does not.
      const auto others = abort.lost(NodeHeartbeat::kSilentWhileFailing) ? std::chrono::milliseconds(500)
                                                              : spec.grace + std::chrono::seconds(2);
      if (store->lost() && attempt < prep.config->distributed().max_restarts) {
        try {
          heartbeat.reset();  // it beats through the lost connection
          store = rejoin_store(*store, prep, launch, master_addr, *args.master_port, token);
          heartbeat = std::make_unique<NodeHeartbeat>(*store, launch.node_rank, launch.nnodes);
        } catch (const std::exception& e) {
          fail_job(stopped, concat("node 0's store did not answer again: ", e.what()), prep, launch, *store, status, others);
        }
      }
      const RestartDecision decision = decide_after_stop(*store, attempt, launch, prep, spec, stopped, others);
      const int stop_signal = stopped.interrupted ? stopped.signal : decision.stop_signal;
      if (!decision.restart && stop_signal != 0) return stop_job(stop_signal, prep, launch, *store, status, others);
      if (!decision.restart) fail_job(stopped, decision.why_not, prep, launch, *store, status, others);
      record_restart(restarts, decision, launch, static_cast<int>(prep.world_size), attempt);
      resume_from = decision.resume_from;
    } catch (const std::exception& failure) {
      fail_job(failure, "", prep, launch, *store, status, spec.grace + std::chrono::seconds(2));
    }
  }
  close_store_last(*store, launch, prep.dist.rendezvous_timeout);
  finish_launch(launch, faults, restarts.restarts(), status, start);
  return 0;
}

}  // namespace plait::cli
