#include "run/launch_plan.hpp"

#include <algorithm>

#include <ATen/detail/CUDAHooksInterface.h>

#include "distributed/core_binding.hpp"
#include "plait/sdk/error.hpp"
#include "debug/fault_plan.hpp"
#include "memory/state_budget.hpp"
#include "run/resume_check.hpp"
#include "checkpoint/checkpoint_location.hpp"
#include "output/run_folder.hpp"
#include "output/run_folder_lock.hpp"
#include "output/run_status.hpp"

namespace plait {
namespace fs = std::filesystem;

KnownWorld known_world(const LaunchRequest& request) {
  if (!request.nproc_per_node) return {};
  return {request.nnodes.value_or(1) * *request.nproc_per_node,
          request.nnodes ? concat("--nnodes ", *request.nnodes, " x --nproc-per-node ", *request.nproc_per_node)
                         : concat("--nproc-per-node ", *request.nproc_per_node)};
}

std::vector<int> cores_for(const PreparedRun& prep, int local_ranks, int local_rank) {
  if (!prep.config->distributed().bind_cores) return {};
  return at_place(prep.config->table("distributed").where("bind_cores"), [&] { return core_slice(usable_cores(), local_ranks, local_rank); });
}

std::string run_folder_of(const LaunchRequest& request) {
  PLAIT_CHECK(!request.out || !request.out->empty(), "--out \"\": the run folder's path is empty",
              "name a folder, or leave --out out for runs/<config>-<time>");
  return choose_run_folder(request.out.value_or(""), request.config);
}

namespace {

// This node's processes: the mesh's ranks split evenly over the nodes, or as
// --nproc-per-node says when that multiplies to them; several nodes need node 0's address.
int processes_per_node(const PreparedRun& prep, const LaunchRequest& request, int nnodes, int node_rank) {
  PLAIT_CHECK(node_rank < nnodes, concat("--node-rank ", node_rank, " is not below --nnodes ", nnodes), "node ranks count from 0");
  PLAIT_CHECK(prep.world_size % nnodes == 0,
              concat("the mesh has ", prep.world_size, " ranks, which do not split evenly over ", nnodes, " nodes"),
              "pass --nproc-per-node, or choose degrees whose product is a multiple of --nnodes");
  const int nproc = request.nproc_per_node.value_or(static_cast<int>(prep.world_size) / nnodes);
  PLAIT_CHECK(nproc * nnodes == prep.world_size,
              concat("--nnodes ", nnodes, " x --nproc-per-node ", nproc, " = ", nproc * nnodes, " processes, but [parallel] dp ",
                     prep.mesh.dp, " x pp ", prep.mesh.pp, " x tp ", prep.mesh.tp, " = ", prep.world_size),
              "make the mesh multiply to the number of processes, or use -1 for one degree");
  PLAIT_CHECK(nnodes == 1 || (request.master_addr && request.master_port),
              "a job of several nodes needs --master-addr and --master-port (node 0's address and a free port)",
              "every node's launcher gets the same two values");
  return nproc;
}

// A traced step, or a fault of the first start at a step, that this run resumes past would never happen.
void check_steps_after_resume(const PreparedRun& prep, const std::vector<FaultSpec>& faults, int64_t resume_step) {
  for (const int64_t step : prep.config->debug().trace_steps) {
    PLAIT_CHECK(step > resume_step,
                concat(prep.config->table("debug").where("trace_steps"), ": [debug] trace_steps names step ", step,
                       ", but this run resumes after step ", resume_step, ": it would never be traced"),
                concat("trace steps from ", resume_step + 1, " on"));
  }
  for (const auto& f : faults) {
    const bool at_a_step = f.op == 0 && f.kind != FaultKind::slow;
    PLAIT_CHECK(!at_a_step || f.attempt > 0 || f.step > resume_step,
                concat(f.place, ": fault '", f.text, "' is at step ", f.step, ", but this run resumes after step ",
                       resume_step, ": it would never happen"),
                concat("choose a step from ", resume_step + 1, " on"));
  }
}

}  // namespace

LaunchPlan plan_launch(const PreparedRun& prep, const LaunchRequest& request) {
  LaunchPlan plan;
  plan.nnodes = request.nnodes.value_or(1);
  plan.node_rank = request.node_rank.value_or(0);
  // A restart, and the record of a fault that ended a process, need a launcher above the
  // rank; a slow rank or a spoiled loss ends nothing.
  const std::vector<FaultSpec> faults = configured_faults(*prep.config);
  const bool ends_a_process = std::any_of(faults.begin(), faults.end(), [](const FaultSpec& f) {
    return f.kind != FaultKind::slow && f.kind != FaultKind::nonfinite;
  });
  const bool needs_launcher = prep.config->distributed().max_restarts > 0 || ends_a_process;
  plan.single_process = prep.world_size == 1 && !request.nnodes && !request.node_rank && !request.nproc_per_node &&
                        !needs_launcher;
  plan.nproc = processes_per_node(prep, request, plan.nnodes, plan.node_rank);
  cores_for(prep, plan.nproc, 0);
  check_state_fits_host(prep, plan.node_rank, plan.nproc);
  const Options& train = prep.config->table("train");
  const TrainSettings& settings = prep.config->train();
  const int gpus = at::detail::getCUDAHooks().getNumGPUs();
  PLAIT_CHECK(settings.device != "cuda" || plan.nproc <= gpus,
              concat(train.where("device"), ": [train] device = \"cuda\" with ", plan.nproc,
                     " ranks on this node, but it has ", gpus, " GPU(s) visible: each rank takes its own"),
              "start at most one rank per GPU (--nproc-per-node), or make CUDA_VISIBLE_DEVICES show more");
  plan.folder = run_folder_of(request);
  std::error_code ec;
  plan.reuse_folder = prep.config->checkpoint().resume == "auto" &&
                      fs::is_directory(plan.folder, ec) && !fs::is_empty(plan.folder, ec);
  if (!plan.reuse_folder) check_run_folder(plan.folder);
  if (plan.reuse_folder) check_run_folder_free(plan.folder);
  if (plan.node_rank == 0) checkpoint::check_checkpoint_dir(prep.config->table("checkpoint"), plan.folder);
  if (const auto from = check_resume(prep, plan.folder)) {
    plan.resume = from->folder.string();
    plan.resume_step = from->step;
    plan.resume_refused = from->refused;
  }
  check_steps_after_resume(prep, faults, plan.resume_step);
  if (plan.reuse_folder && !plan.resume) {
    const auto status = read_run_status(plan.folder);
    PLAIT_CHECK(!status || status->state != "finished",
                concat(prep.config->table("checkpoint").where("resume"), ": the run in ", plan.folder,
                       " finished (its status.json says so) and kept no checkpoint to resume from: [checkpoint] resume = "
                       "\"auto\" would train it again from the start, replacing its results"),
                "choose another --out for a new run; keep checkpoints ([checkpoint] every or final) to continue one");
  }
  return plan;
}

}  // namespace plait
