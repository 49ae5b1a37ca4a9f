#pragma once
// How `plait run` will start the job, checked before anything is written: nodes and
// ranks per node against the mesh, the cores when ranks are bound to them, and the run
// folder (creatable and empty). `plait config validate` makes the same checks with the
// same flags, so "valid" means "will start".
#include <optional>
#include <string>
#include <vector>

#include "run/prepare.hpp"

namespace plait {

// What the command line says about the launch.
struct LaunchRequest {
  std::string config = {};
  std::optional<std::string> out = {};  // --out; absent: runs/<config>-<time>
  std::optional<int> nnodes = {}, node_rank = {}, nproc_per_node = {};
  std::optional<std::string> master_addr = {};
  std::optional<int> master_port = {};
};

struct LaunchPlan {
  bool single_process = true;  // no launcher: this process trains
  int nnodes = 1, node_rank = 0;
  int nproc = 1;               // ranks on this node
  std::string folder;          // the run folder to make
  // [checkpoint] resume = "auto" on a run folder that exists: the restarted job's; kept.
  bool reuse_folder = false;
  std::optional<std::string> resume;  // the checked checkpoint this run resumes from
  int64_t resume_step = 0;
  std::vector<std::string> resume_refused;  // newer checkpoints passed over for it, with why
};

// The number of processes the flags imply (--nnodes x --nproc-per-node), or 0, and those flags.
KnownWorld known_world(const LaunchRequest& request);

LaunchPlan plan_launch(const PreparedRun& prep, const LaunchRequest& request);

// The run folder the request names (runs/<config>-<time> without --out); --out "" is refused.
std::string run_folder_of(const LaunchRequest& request);

// With [distributed] bind_cores: the cores of local rank `local_rank` of `local_ranks`
// (refused, at the config line, when this machine lets the job use fewer cores than
// ranks); empty when ranks are not bound.
std::vector<int> cores_for(const PreparedRun& prep, int local_ranks, int local_rank);

}  // namespace plait
