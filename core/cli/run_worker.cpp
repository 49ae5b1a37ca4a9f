#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <thread>

#include "checkpoint/checkpoint_location.hpp"
#include "cli/run_modes.hpp"
#include "debug/exception_text.hpp"
#include "debug/fault_injector.hpp"
#include "distributed/core_binding.hpp"
#include "distributed/flight_recorder.hpp"
#include "distributed/job_token.hpp"
#include "distributed/rank_device.hpp"
#include "distributed/rendezvous.hpp"
#include "distributed/restart_agreement.hpp"
#include "loader/plugin_instance.hpp"
#include "log/logging.hpp"
#include "plait/sdk/error.hpp"
#include "run/resume_check.hpp"
#include "output/run_folder.hpp"
#include "output/run_folder_lock.hpp"
#include "output/run_status.hpp"
#include "output/stop_notice.hpp"

namespace plait::cli {
namespace fs = std::filesystem;
namespace {

// The store: the launcher's, or rank 0's when torchrun or Slurm started the ranks.
std::unique_ptr<JobStore> join_store(const WorkerEnv& worker, const PreparedRun& prep, const std::string& who) {
  const std::string token = job_token_from_env();  // plait's launcher hands over its own
  if (worker.store_on_launcher || worker.rank != 0) {
    // Under torchrun its agent hosts the store, and rank 0 publishes the token's check there.
    const bool publishes_check = worker.started_by != "plait" && worker.rank == 0;
    return JobStore::connect(worker.master_addr, worker.master_port, worker.job_id, prep.dist.rendezvous_timeout, who,
                             token, publishes_check);
  }
  // Every rank on this machine, reaching it over loopback: no other machine needs to.
  const bool loopback = worker.local_world_size == worker.world_size && is_loopback(worker.master_addr);
  return JobStore::host(worker.master_port, worker.job_id, prep.dist.rendezvous_timeout, token, loopback);
}

// Under torchrun or Slurm, rank 0 makes the run folder (its name has rank 0's clock in it)
// and the lock file; the others take its folder, or its reason for failing.
// Every rank resumes from the checkpoint rank 0 checked (`resume_from`; empty: none), which
// may be older than the newest: a damaged one is passed over.
std::string make_folder_as_ranks(const WorkerEnv& worker, const RunArgs& args, const PreparedRun& prep,
                                 JobStore& store, RunFolderLock& held, std::string& resume_from) {
  if (worker.rank == 0) {
    try {
      const std::string folder = run_folder_of(launch_request(args));
      // A job torchrun restarted (resume = "auto"): its folder is kept, the steps after the checkpoint it resumes from trained again.
      std::error_code ec;
      const bool reuse = prep.config->checkpoint().resume == "auto" && fs::is_directory(folder, ec) && !fs::is_empty(folder, ec);
      if (reuse) check_run_folder_free(folder);
      checkpoint::check_checkpoint_dir(prep.config->table("checkpoint"), folder);
      const auto from = check_resume(prep, folder);
      for (const auto& why : from ? from->refused : std::vector<std::string>{}) {
        core_log().warn("resume: passed over checkpoint ", why);
      }
      held = claim_run_folder(folder, reuse, from ? from->step : 0);
      checkpoint::claim_checkpoints(prep.config->table("checkpoint"), folder);
      write_lock(prep, folder);
      resume_from = from ? fs::absolute(from->folder).string() : "";
      store.set("resume-from", "at:" + resume_from);  // never empty: a key the store holds
      store.set("run-dir", "ok:" + fs::absolute(folder).string());
      return folder;
    } catch (const std::exception& e) {
      store.set("run-dir", e.what());
      throw;
    }
  }
  const std::string verdict = store.wait_get("run-dir", prep.dist.rendezvous_timeout, "rank 0 to make the run folder");
  PLAIT_CHECK(verdict.rfind("ok:", 0) == 0, concat("rank 0 could not make the run folder: ", verdict), "");
  resume_from = store.wait_get("resume-from", prep.dist.rendezvous_timeout, "rank 0's checkpoint to resume from").substr(3);
  return verdict.substr(3);
}

// Every rank must train the same config; compare against rank 0's.
void agree_on_config(const WorkerEnv& worker, const PreparedRun& prep, JobStore& store, const std::string& who,
                     const std::string& config) {
  const std::string hash = std::to_string(std::hash<std::string>{}(prep.config->to_toml(false)));
  if (worker.rank == 0) store.set("config-hash", hash);
  const std::string expected = store.wait_get("config-hash", prep.dist.rendezvous_timeout, "rank 0's config");
  PLAIT_CHECK(expected == hash, concat(who, " resolved a different config from rank 0's (", config, ")"),
              "start every rank with the same config file, --set flags and plugin path");
}

// The communicators of every axis, from the comm plugin; the world goes before its backend.
struct Joined {
  PluginInstance<CommBackend> backend;
  std::unique_ptr<World> world;
};

Joined join_world(const WorkerEnv& worker, const PreparedRun& prep, std::unique_ptr<JobStore> store) {
  const std::string& comm_name = prep.config->parallel().comm;
  Joined joined;
  // No metrics sink: the core counts communication itself.
  joined.backend = make_plugin<CommBackend>(*prep.registry, prep.config->table(comm_name), comm_name, {},
                                            {worker.rank, worker.world_size});
  const at::Device device =
      rank_device(prep.config->train().device == "cuda", worker.local_rank);
  use_rank_device(device);
  joined.world = World::join(worker, std::move(store), prep.mesh, *joined.backend.plugin, prep.dist, device.str(),
                             core_log());
  if (worker.rank == 0) core_log().info("plait ", PLAIT_VERSION, ": ", worker.world_size, " ranks joined (", comm_name, ")");
  return joined;
}

// The rank's flight recorder, for the stop notice and SIGUSR1, while its world lives.
struct FlightRecordWhileJoined {
  FlightRecordWhileJoined(World& world, const std::string& folder) {
    set_process_flight_recorder(&world.flight(), folder, world.rank());
  }
  ~FlightRecordWhileJoined() { set_process_flight_recorder(nullptr, "", 0); }
  FlightRecordWhileJoined(const FlightRecordWhileJoined&) = delete;
  FlightRecordWhileJoined& operator=(const FlightRecordWhileJoined&) = delete;
};

// Rank 0 hosts the store when torchrun or Slurm started the job: it leaves last.
void leave(const WorkerEnv& worker, JobStore& job, std::chrono::milliseconds timeout) {
  job.add("finished", 1);
  if (worker.store_on_launcher || worker.rank != 0) return;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (job.add("finished", 0) < worker.world_size && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Any failure, plait's or LibTorch's own: a rank that ends without its flight record is
// taken for one killed or stopped, and the report would name it wrongly. Then the job's
// store hears of it, and the run's status.
void report_failure(const WorkerEnv& worker, const std::exception& e, JobStore* job, RunStatus* status, bool from_plait) {
  const auto* own = dynamic_cast<const Error*>(&e);
  const std::string message = own ? std::string(e.what()) : exception_first_line(e);
  yield_to_stop_notice();
  write_process_flight_record(message);
  try {
    if (job != nullptr) report_rank_failure(*job, {worker.rank, message, own ? own->hint() : "", says_peer_lost(message)});
  } catch (const std::exception&) {
    // The store is gone (its host failed first): the error below is still this rank's news.
  }
  // Under plait's launcher the launcher writes how it ended; this rank's last step goes first.
  if (status && from_plait) status->stopping(message);
  if (status && !from_plait) status->failed(message);
}

// The rank's log file (plait's launcher writes its output there itself), its stop notice,
// and what writes its flight record on a signal or a crash.
void install_rank_reports(const WorkerEnv& worker, const std::string& folder, bool from_plait, bool keeps_status) {
  const std::string log_file = (fs::path(folder) / concat("rank-", worker.rank, ".log")).string();
  if (!from_plait) add_log_file(log_file);
  install_stop_notice({.rank = worker.rank,
                       .who = "",
                       .log_file = log_file,
                       .stderr_is_logged = from_plait,
                       .status_folder = keeps_status ? folder : "",
                       .launcher_parent = from_plait});
  install_flight_signal();
  install_crash_flight_record();
}

// How long a restart took, as the launcher's record times it: to rank 0's first step.
void time_restart(const WorkerEnv& worker, RunStatus* status, JobStore* job) {
  if (status == nullptr || worker.restart == 0 || worker.rank != 0) return;
  status->after_first_step([job](int64_t step) {
    try {
      report_first_step(*job, step);
    } catch (const std::exception&) {
      // the record misses one time; training goes on
    }
  });
}

}  // namespace

int run_worker(const WorkerEnv& worker, const RunArgs& args) {
  const bool from_plait = worker.started_by == "plait";
  if (from_plait) {
    // Die with the launcher: a rank must never outlive the process supervising it (the
    // stop notice below says so in its log once it is installed).
    ::prctl(PR_SET_PDEATHSIG, launcher_death_signal());
    if (const char* pid = std::getenv("PLAIT_LAUNCHER_PID"); pid && std::to_string(::getppid()) != pid) return 1;
  }
  const std::string who = concat("rank ", worker.rank, " (", worker.started_by, ")");
  // plait's launcher checked everything, data included, before it started this rank.
  PreparedRun prep = prepare_run(args.config, args.overrides(), {worker.world_size, concat("WORLD_SIZE=", worker.world_size)},
                                 /*scan_data=*/!from_plait);
  configure_logging("", args.verbose);  // plait's launcher writes this rank's output to its log
  if (!from_plait && worker.rank == 0) log_config_notes(prep);
  const std::vector<int> cores = cores_for(prep, worker.local_world_size, worker.local_rank);
  if (!cores.empty()) bind_process_to(cores);
  std::unique_ptr<JobStore> store = join_store(worker, prep, who);
  RunFolderLock held;  // rank 0's, under torchrun or Slurm: the run folder is this job's while it trains
  std::string resume_from;  // under plait's launcher, its --set checkpoint.resume_from says it
  const std::string folder =
      from_plait ? worker.run_dir : make_folder_as_ranks(worker, args, prep, *store, held, resume_from);
  // The run's status: the node's first rank under plait's launcher (its steps), rank 0 otherwise (all of it).
  const bool keeps_status = from_plait ? worker.local_rank == 0 : worker.rank == 0;
  install_rank_reports(worker, folder, from_plait, keeps_status);
  std::unique_ptr<RunStatus> status;
  if (keeps_status) status = std::make_unique<RunStatus>(folder, prep.config->train().steps);
  std::optional<FaultInjector> faults;  // outlives the world that acts on it
  Joined joined;
  std::optional<FlightRecordWhileJoined> flight;
  try {
    agree_on_config(worker, prep, *store, who, args.config);
    join_all_ranks(*store, worker.rank, worker.world_size, prep.dist.rendezvous_timeout);
    joined = join_world(worker, prep, std::move(store));
    flight.emplace(*joined.world, folder);
    faults.emplace(configured_faults(*prep.config), worker.rank, worker.restart, folder);
    if (faults->empty()) faults.reset();
    joined.world->inject(faults ? &*faults : nullptr);
    time_restart(worker, status.get(), joined.world->store());
    if (!cores.empty()) core_log().info(who, " bound to cores ", format_core_list(usable_cores()));  // the kernel's word
    RunPlan plan = run_plan(prep, folder, joined.world.get(), status.get());
    plan.resume_from = resume_from;
    plan.local_world_size = worker.local_world_size;
    plan.local_rank = worker.local_rank;
    plan.bound_cores = static_cast<int>(cores.size());
    train_logged(plan);
    joined.world->shut_down();
  } catch (const std::exception& e) {
    report_failure(worker, e, joined.world ? joined.world->store() : store.get(), status.get(), from_plait);
    throw;
  }
  if (status && !from_plait) status->finished();
  leave(worker, *joined.world->store(), prep.dist.rendezvous_timeout);
  flush_logs();
  return 0;
}

}  // namespace plait::cli
