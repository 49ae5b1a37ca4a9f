#pragma once
// Who this process is in a job. A process is a rank when one of these set it up:
//   plait's own launcher   PLAIT_RUN_DIR, PLAIT_JOB_ID + the torchrun variables below
//   torchrun               RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT
//   Slurm (srun, > 1 task) SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NTASKS_PER_NODE,
//                          with MASTER_ADDR (and MASTER_PORT, default 29500) from the environment
// Otherwise `plait run` is the launcher itself (or a single process).
#include <map>
#include <optional>
#include <string>

namespace plait {

struct WorkerEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  std::string job_id = {};
  std::string run_dir = {};        // set by plait's launcher, which made the folder and the lock file
  bool store_on_launcher = false;  // plait's launcher (or torchrun's agent) hosts the store; otherwise rank 0 does
  std::string started_by = {};     // "plait", "torchrun", "slurm"
  int restart = 0;                 // how often the job was restarted before this start (0: first start)
};

// The restarts torchrun may make of this job (TORCHELASTIC_MAX_RESTARTS), 0 outside torchrun.
int64_t torchrun_max_restarts();

// The rank this process is, from its environment, or nothing when it is not one.
// `master_addr`/`master_port` from the command line override the environment.
std::optional<WorkerEnv> worker_from_env(const std::optional<std::string>& master_addr,
                                         const std::optional<int>& master_port);

// The environment plait's launcher gives one of its ranks.
std::map<std::string, std::string> worker_environment(const WorkerEnv& worker);

// A random job id (hex), unique enough to keep jobs sharing a store port apart.
std::string new_job_id();

}  // namespace plait
