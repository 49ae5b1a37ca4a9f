#include "distributed/launch_env.hpp"

#include <cstdlib>
#include <random>

#include "plait/sdk/error.hpp"

namespace plait {
namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

int env_int(const char* name, int fallback) {
  auto v = env(name);
  if (!v) return fallback;
  try {
    std::size_t used = 0;
    const int n = std::stoi(*v, &used);
    if (used == v->size()) return n;
  } catch (const std::exception&) {
  }
  throw Error(concat("environment variable ", name, "=", *v, " is not an integer"), "fix the launcher's environment");
}

}  // namespace

std::optional<WorkerEnv> worker_from_env(const std::optional<std::string>& master_addr,
                                         const std::optional<int>& master_port) {
  WorkerEnv w;
  if (env("RANK") && env("WORLD_SIZE")) {
    w.rank = env_int("RANK", 0);
    w.world_size = env_int("WORLD_SIZE", 1);
    w.local_rank = env_int("LOCAL_RANK", w.rank);
    w.local_world_size = env_int("LOCAL_WORLD_SIZE", w.world_size);
    w.run_dir = env("PLAIT_RUN_DIR").value_or("");
    w.started_by = w.run_dir.empty() ? "torchrun" : "plait";
    // torchrun's agent hosts a store at MASTER_ADDR:MASTER_PORT itself (and keeps it across its restarts).
    w.store_on_launcher = !w.run_dir.empty() || env("TORCHELASTIC_USE_AGENT_STORE").value_or("") == "True";
    w.job_id = env("PLAIT_JOB_ID").value_or(env("TORCHELASTIC_RUN_ID").value_or("default"));
    w.restart = env_int(w.started_by == "plait" ? "PLAIT_RESTART" : "TORCHELASTIC_RESTART_COUNT", 0);
    // A restarted job's keys must not meet its earlier start's (plait's launcher names each start's job itself).
    if (w.started_by == "torchrun" && w.restart > 0) w.job_id += concat("-r", w.restart);
  } else if (env("SLURM_PROCID") && env_int("SLURM_NTASKS", 1) > 1) {
    w.rank = env_int("SLURM_PROCID", 0);
    w.world_size = env_int("SLURM_NTASKS", 1);
    w.local_rank = env_int("SLURM_LOCALID", 0);
    w.local_world_size = env_int("SLURM_NTASKS_PER_NODE", w.world_size);
    w.started_by = "slurm";
    w.job_id = env("SLURM_JOB_ID").value_or("default");
    PLAIT_CHECK(master_addr || env("MASTER_ADDR"),
                concat("rank ", w.rank, " of a Slurm job has no MASTER_ADDR"),
                "export MASTER_ADDR=<first node of the allocation> or pass --master-addr");
  } else {
    return std::nullopt;
  }
  w.master_addr = master_addr.value_or(env("MASTER_ADDR").value_or("127.0.0.1"));
  w.master_port = master_port.value_or(env_int("MASTER_PORT", 29500));
  PLAIT_CHECK(w.world_size >= 1 && w.rank >= 0 && w.rank < w.world_size,
              concat("RANK ", w.rank, " is outside WORLD_SIZE ", w.world_size), "fix the launcher's environment");
  PLAIT_CHECK(w.master_port > 0 && w.master_port < 65536, concat("MASTER_PORT ", w.master_port, " is not a port"),
              "use a port between 1 and 65535");
  return w;
}

std::map<std::string, std::string> worker_environment(const WorkerEnv& w) {
  return {{"RANK", std::to_string(w.rank)},
          {"WORLD_SIZE", std::to_string(w.world_size)},
          {"LOCAL_RANK", std::to_string(w.local_rank)},
          {"LOCAL_WORLD_SIZE", std::to_string(w.local_world_size)},
          {"MASTER_ADDR", w.master_addr},
          {"MASTER_PORT", std::to_string(w.master_port)},
          {"PLAIT_JOB_ID", w.job_id},
          {"PLAIT_RUN_DIR", w.run_dir},
          {"PLAIT_RESTART", std::to_string(w.restart)}};
}

int64_t torchrun_max_restarts() { return env("TORCHELASTIC_MAX_RESTARTS") ? env_int("TORCHELASTIC_MAX_RESTARTS", 0) : 0; }

std::string new_job_id() {
  std::random_device rd;
  const uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace plait
