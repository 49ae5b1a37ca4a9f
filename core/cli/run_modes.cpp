#include "cli/run_modes.hpp"

#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include <boost/dll/runtime_symbol_info.hpp>
#include <nlohmann/json.hpp>
#include <torch/headeronly/version.h>

#include "data/make_sampler.hpp"
#include "distributed/core_binding.hpp"
#include "distributed/rendezvous.hpp"
#include "distributed/supervisor.hpp"
#include "log/logging.hpp"
#include "plait/sdk/error.hpp"
#include "run/run_folder.hpp"
#include "train/trainer.hpp"

namespace plait::cli {
namespace fs = std::filesystem;

namespace {

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// A lock file run again: say what differs from this build.
void warn_on_lock_drift(const PreparedRun& prep) {
  const Options& lock = prep.config->table("lock");
  if (auto v = lock.find<std::string>("plait_version"); v && *v != PLAIT_VERSION) {
    core_log().warn("this lock file was written by plait ", *v, "; this is plait ", PLAIT_VERSION);
  }
  if (auto v = lock.find<std::string>("torch_version"); v && *v != TORCH_VERSION) {
    core_log().warn("this lock file was written with LibTorch ", *v, "; this build uses ", TORCH_VERSION);
  }
  if (auto v = lock.find<int64_t>("params"); v && *v != closed_form_params(prep.model)) {
    core_log().warn("this lock file records ", *v, " parameters; the model now has ", closed_form_params(prep.model));
  }
}

std::string out_dir(const RunArgs& args) { return choose_run_folder(args.out, args.config); }

void write_lock(const PreparedRun& prep, const std::string& folder) {
  write_file_atomically((fs::path(folder) / "config.lock.toml").string(), lock_text(prep));
}

RunSummary train_logged(const RunPlan& plan) {
  try {
    return run_training(plan);
  } catch (const Error& e) {
    write_log_files(LogLevel::error, concat("run failed: ", e.what()));
    flush_logs();
    // A copy made by the core: the original may have been built by a plugin library,
    // which is unloaded with the registry before main() gets to print it.
    throw Error(e.what(), e.hint(), e.origin());
  } catch (const std::exception& e) {
    write_log_files(LogLevel::error, concat("run failed: ", e.what()));  // main() prints it to the console
    flush_logs();
    throw;
  }
}

std::string hash_text(const std::string& text) {
  return std::to_string(std::hash<std::string>{}(text));
}

}  // namespace

std::string lock_text(const PreparedRun& prep) {
  const Options& train = prep.config->table("train");
  const int64_t seq_len = resolve_seq_len(prep.config->table("data"), prep.model);
  std::string text = concat("# config.lock.toml: the resolved config of this run, every default filled in.\n",
                            "# Written by plait ", PLAIT_VERSION, " at ", utc_now(), " from ", prep.loaded.path,
                            ".\n# Run it again with: plait run <this file>\n\n");
  text += prep.config->to_toml(/*provenance=*/false);
  text += concat("\n[lock]\nplait_version = \"", PLAIT_VERSION, "\"\ntorch_version = \"", TORCH_VERSION,
                 "\"\nparams = ", closed_form_params(prep.model),
                 "\nflops_per_token = ", ConfigValue::of(flops_per_token(prep.model, seq_len)).to_toml(),
                 "\npeak_flops = ", ConfigValue::of(train.get<double>("peak_flops")).to_toml(),
                 "\nworld_size = ", prep.world_size, "\n");
  return text;
}

std::string summary_from_metrics(const std::string& run_dir, double seconds) {
  std::ifstream in(fs::path(run_dir) / "metrics.jsonl");
  std::string line;
  double first = 0.0, last = 0.0;
  int64_t steps = 0;
  while (std::getline(in, line)) {
    const double loss = nlohmann::json::parse(line).at("loss").get<double>();
    if (steps++ == 0) first = loss;
    last = loss;
  }
  char buf[160];
  std::snprintf(buf, sizeof(buf), "done: loss %.4f -> %.4f over %lld steps in %.1f s", first, last,
                static_cast<long long>(steps), seconds);
  return buf;
}

int run_single(PreparedRun& prep, const RunArgs& args) {
  warn_on_lock_drift(prep);
  // Every check has passed: only now does anything get written.
  const std::string folder = out_dir(args);
  create_run_folder(folder);
  configure_logging((fs::path(folder) / "run.log").string(), args.verbose);  // one process: one log
  write_lock(prep, folder);
  core_log().info("plait ", PLAIT_VERSION, " (LibTorch ", TORCH_VERSION, "): ", args.config, " -> ", folder);
  auto world = World::single();
  const auto start = std::chrono::steady_clock::now();
  train_logged({prep.config.get(), prep.registry.get(), prep.model, &prep.pipeline, folder, world.get()});
  core_log().info(summary_from_metrics(folder, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()),
                  "; run folder ", folder);
  flush_logs();
  return 0;
}

int run_launcher(PreparedRun& prep, const RunArgs& args) {
  const int nnodes = args.nnodes.value_or(1);
  const int node_rank = args.node_rank.value_or(0);
  PLAIT_CHECK(node_rank < nnodes, concat("--node-rank ", node_rank, " is not below --nnodes ", nnodes),
              "node ranks count from 0");
  PLAIT_CHECK(prep.world_size % nnodes == 0,
              concat("the mesh has ", prep.world_size, " ranks, which do not split evenly over ", nnodes, " nodes"),
              "pass --nproc-per-node, or choose degrees whose product is a multiple of --nnodes");
  const int nproc = args.nproc_per_node.value_or(static_cast<int>(prep.world_size) / nnodes);
  PLAIT_CHECK(nproc * nnodes == prep.world_size,
              concat("--nnodes ", nnodes, " x --nproc-per-node ", nproc, " = ", nproc * nnodes, " processes, but [parallel] dp ",
                     prep.mesh.dp, " x pp ", prep.mesh.pp, " x tp ", prep.mesh.tp, " = ", prep.world_size),
              "make the mesh multiply to the number of processes, or use -1 for one degree");
  PLAIT_CHECK(nnodes == 1 || (args.master_addr && args.master_port),
              "a job of several nodes needs --master-addr and --master-port (node 0's address and a free port)",
              "every node's launcher gets the same two values");
  warn_on_lock_drift(prep);

  const std::string folder = out_dir(args);
  create_run_folder(folder);
  configure_logging((fs::path(folder) / "launcher.log").string(), args.verbose);
  write_lock(prep, folder);
  const std::string node = concat("node ", node_rank, " of ", nnodes);
  core_log().info("plait ", PLAIT_VERSION, " (LibTorch ", TORCH_VERSION, "): ", args.config, " -> ", folder, "; ",
                  prep.world_size, " ranks (dp ", prep.mesh.dp, " x pp ", prep.mesh.pp, " x tp ", prep.mesh.tp, "), ",
                  nproc, " on ", node);

  // Node 0's launcher hosts the job's store for its whole life, so it outlives any rank.
  const std::string master_addr = args.master_addr.value_or("127.0.0.1");
  std::unique_ptr<JobStore> store =
      node_rank == 0 ? JobStore::host(args.master_port.value_or(0), new_job_id(), prep.dist.rendezvous_timeout)
                     : JobStore::connect(master_addr, *args.master_port, /*adopt the job id*/ "",
                                         prep.dist.rendezvous_timeout, concat("the launcher of ", node));
  const std::string job_id = store->job_id();
  StoreAbortChannel abort(*store, static_cast<int>(prep.world_size));

  SupervisorSpec spec;
  spec.executable = boost::dll::program_location().string();
  spec.args = {"run", (fs::absolute(folder) / "config.lock.toml").string(), "--out", fs::absolute(folder).string()};
  if (args.verbose) spec.args.push_back("--verbose");
  spec.run_dir = folder;
  spec.node = node;
  spec.abort = &abort;
  spec.console_rank = 0;
  for (int local = 0; local < nproc; ++local) {
    WorkerEnv w;
    w.rank = node_rank * nproc + local;
    w.world_size = static_cast<int>(prep.world_size);
    w.local_rank = local;
    w.local_world_size = nproc;
    w.master_addr = master_addr;
    w.master_port = store->port();
    w.job_id = job_id;
    w.run_dir = fs::absolute(folder).string();
    auto env = worker_environment(w);
    env["PLAIT_LAUNCHER_PID"] = std::to_string(::getpid());
    spec.ranks.push_back({w.rank, local, env});
  }
  const auto start = std::chrono::steady_clock::now();
  // Node 0's launcher keeps the store open until every other launcher is done with it.
  auto close_store_last = [&](std::chrono::milliseconds wait) {
    if (node_rank != 0) return report_launcher_end(*store, node_rank);
    const std::vector<int> missing = await_launcher_ends(*store, nnodes, wait);
    if (!missing.empty()) {
      std::string nodes;
      for (int n : missing) nodes += (nodes.empty() ? "" : ", ") + std::to_string(n);
      core_log().warn("the launchers of nodes ", nodes, " did not report their end within ", wait.count() / 1000.0,
                      " s; closing the job's store anyway (see their output)");
    }
  };
  try {
    supervise(spec, core_log());
  } catch (const std::exception& e) {
    write_log_files(LogLevel::error, e.what());
    try {
      close_store_last(spec.grace + std::chrono::seconds(2));  // the others are stopping too
    } catch (const std::exception&) {
      // The store may be gone already (node 0 failed first); the failure above is the news.
    }
    flush_logs();
    throw;
  }
  close_store_last(prep.dist.rendezvous_timeout);
  if (node_rank == 0) {
    core_log().info(summary_from_metrics(folder, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()),
                    "; run folder ", folder);
  }
  flush_logs();
  return 0;
}

int run_worker(const WorkerEnv& worker, const RunArgs& args) {
  const bool from_plait = worker.started_by == "plait";
  if (from_plait) {
    // Die with the launcher: a rank must never outlive the process supervising it.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (const char* pid = std::getenv("PLAIT_LAUNCHER_PID"); pid && std::to_string(::getppid()) != pid) return 1;
  }
  std::vector<std::string> sets = args.sets;
  if (args.steps) sets.push_back(concat("train.steps=", *args.steps));
  const std::string who = concat("rank ", worker.rank, " (", worker.started_by, ")");
  PreparedRun prep = prepare_run(args.config, sets, worker.world_size);
  const std::string folder = from_plait ? worker.run_dir : out_dir(args);
  configure_logging("", args.verbose);  // plait's launcher writes this rank's output to its log
  std::vector<int> cores;  // this rank's own, when bound
  if (prep.config->table("distributed").get<bool>("bind_cores")) {
    cores = core_slice(usable_cores(), worker.local_world_size, worker.local_rank);
    bind_process_to(cores);
  }

  // The store: the launcher's, or rank 0's when torchrun or Slurm started the ranks.
  std::unique_ptr<JobStore> store =
      (worker.store_on_launcher || worker.rank != 0)
          ? JobStore::connect(worker.master_addr, worker.master_port, worker.job_id, prep.dist.rendezvous_timeout, who)
          : JobStore::host(worker.master_port, worker.job_id, prep.dist.rendezvous_timeout);

  if (!from_plait) {
    // Rank 0 makes the run folder and lock file; the others follow its verdict.
    if (worker.rank == 0) {
      try {
        create_run_folder(folder);
        write_lock(prep, folder);
        store->set("run-dir", "ok");
      } catch (const std::exception& e) {
        store->set("run-dir", e.what());
        throw;
      }
    } else {
      const std::string verdict = store->wait_get("run-dir", prep.dist.rendezvous_timeout, "rank 0 to make the run folder");
      PLAIT_CHECK(verdict == "ok", concat("rank 0 could not make the run folder: ", verdict), "");
      fs::create_directories(folder);
    }
    add_log_file((fs::path(folder) / concat("rank-", worker.rank, ".log")).string());
  }
  // Every rank must train the same config; compare against rank 0's.
  const std::string config_hash = hash_text(prep.config->to_toml(false));
  if (worker.rank == 0) store->set("config-hash", config_hash);
  const std::string expected = store->wait_get("config-hash", prep.dist.rendezvous_timeout, "rank 0's config");
  PLAIT_CHECK(expected == config_hash,
              concat(who, " resolved a different config from rank 0's (", args.config, ")"),
              "start every rank with the same config file, --set flags and plugin path");
  join_all_ranks(*store, worker.rank, worker.world_size, prep.dist.rendezvous_timeout);

  const std::string comm_name = prep.config->table("parallel").get<std::string>("comm");
  auto backend = std::static_pointer_cast<CommBackend>(prep.registry->create(*prep.registry->find(comm_name)));
  auto comm_log = make_logger("plugin." + comm_name);
  PluginContext comm_context{comm_name, &prep.config->table(comm_name), comm_log.get(), nullptr, worker.rank,
                             worker.world_size};
  backend->configure(comm_context);
  const bool hosts_store = !worker.store_on_launcher && worker.rank == 0;
  const bool cuda = prep.config->table("train").get<std::string>("device") == "cuda";
  const std::string device = cuda ? concat("cuda:", worker.local_rank) : "cpu";
  auto world = World::join(worker, std::move(store), prep.mesh, *backend, prep.dist, device, core_log());
  if (worker.rank == 0) core_log().info("plait ", PLAIT_VERSION, ": ", worker.world_size, " ranks joined (", comm_name, ")");
  // What the kernel now reports, not what was asked.
  if (!cores.empty()) core_log().info(who, " bound to cores ", format_core_list(usable_cores()));
  RunPlan plan{prep.config.get(), prep.registry.get(), prep.model, &prep.pipeline, folder, world.get(), worker.local_world_size,
               worker.local_rank, static_cast<int>(cores.size())};
  train_logged(plan);
  // Rank 0 hosts the store when torchrun or Slurm started the job: it leaves last.
  JobStore& job = *world->store();
  job.add("finished", 1);
  const auto deadline = std::chrono::steady_clock::now() + prep.dist.rendezvous_timeout;
  while (hosts_store && job.add("finished", 0) < worker.world_size && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  flush_logs();
  return 0;
}

}  // namespace plait::cli
