// The GPU communicator: LibTorch's c10d ProcessGroupNCCL behind plait's Communicator.
// Each rank drives the GPU its group spec names ("cuda:<local rank>").
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include "plait/c10d/communicator.hpp"
#include "plait/sdk/sdk.hpp"

#include "plait_options.hpp"
#include "plait_schema.hpp"

namespace {

class NcclBackend final : public plait::CommBackend {
 public:
  // Without a visible GPU this plugin is listed but cannot be chosen.
  static plait::Availability probe() {
    try {
      if (c10::cuda::device_count() > 0) return plait::Availability::yes();
      return plait::Availability::no("no CUDA device is visible");
    } catch (const std::exception& e) {
      const std::string what = e.what();
      return plait::Availability::no("CUDA is not usable here: " + what.substr(0, what.find('\n')));
    }
  }

  void check(const plait::RunCheck& run) const override {
    PLAIT_CHECK(run.train->get<std::string>("device") == "cuda",
                plait::concat(run.train->where("device"), ": [train] device = \"", run.train->get<std::string>("device"),
                              "\", but the nccl communicator ([parallel] comm = \"nccl\") moves CUDA tensors"),
                "set [train] device = \"cuda\", or [parallel] comm = \"gloo\" on the CPU");
  }
  std::shared_ptr<plait::Communicator> connect(const plait::GroupSpec& spec) override {
    PLAIT_CHECK(spec.device.rfind("cuda:", 0) == 0,
                plait::concat("nccl moves CUDA tensors; group ", spec.name, " is on ", spec.device),
                "set [train] device = \"cuda\", or use the gloo communicator on the CPU");
    const int device = std::stoi(spec.device.substr(5));
    PLAIT_CHECK(device < c10::cuda::device_count(),
                plait::concat("nccl: rank ", spec.ranks[spec.group_rank], " wants GPU ", device, " but only ",
                              static_cast<int>(c10::cuda::device_count()), " are visible"),
                "start at most one rank per GPU on each node");
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
    auto options = c10d::ProcessGroupNCCL::Options::create(high_priority_);
    options->timeout = spec.timeout;
    options->group_name = spec.name;  // NCCL's own logs and flight recorder name it as plait does
    options->global_ranks_in_group.assign(spec.ranks.begin(), spec.ranks.end());
    split_from_parent(spec, *options);
    const int size = static_cast<int>(spec.ranks.size());
    auto pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(plait::c10d_comm::group_store(spec), spec.group_rank, size,
                                                          options);
    // Bound to the rank's GPU and connected now, as init_process_group(device_id=...)
    // does: a communicator made lazily at its first collective would be made on
    // whatever device is current then, and its setup time would land in a step.
    const at::Device gpu(at::kCUDA, static_cast<c10::DeviceIndex>(device));
    pg->setBoundDeviceId(gpu);
    pg->eagerConnectSingleDevice(gpu);
    if (timing_) pg->enableCollectivesTiming();
    made_.insert_or_assign(spec.name, c10::weak_intrusive_ptr<c10d::ProcessGroupNCCL>(pg));
    // A wait orders the rank's stream after the collective and lets the host go on; the
    // watchdog keeps the group's timeout (options->timeout).
    return std::make_shared<plait::c10d_comm::C10dCommunicator>(std::move(pg), "nccl", spec.group_rank, size,
                                                                /*supports_avg=*/true, /*device_timed=*/timing_,
                                                                plait::c10d_comm::WaitHolds::stream);
  }

 protected:
  void on_configure() override {
    const auto nccl = plait_options::Options::from(options());  // [nccl], typed from schema.toml
    high_priority_ = nccl.high_priority_stream;
    timing_ = nccl.timing;
  }

 private:
  // A group that partitions one this plugin made (GroupSpec::split_from) is split from it
  // (ncclCommSplit, as torch.distributed's new_group does once the world is bound to a
  // device): every member of the parent takes part at once, each with its part's colour,
  // and the parts share the parent's setup instead of each connecting anew.
  void split_from_parent(const plait::GroupSpec& spec, c10d::ProcessGroupNCCL::Options& options) const {
    if (spec.split_from.empty()) return;
    const auto found = made_.find(spec.split_from);
    if (found == made_.end()) return;
    auto parent = found->second.lock();
    if (!parent) return;
    options.split_from = parent;
    // The part's smallest global rank: the same on its members, another on every other part.
    options.split_color = *std::min_element(spec.ranks.begin(), spec.ranks.end());
  }

  bool high_priority_ = false;
  bool timing_ = true;
  // The groups made so far, by name, for the groups split from them; weak: the
  // communicator owns its process group and ends it.
  std::map<std::string, c10::weak_intrusive_ptr<c10d::ProcessGroupNCCL>> made_;
};

}  // namespace

PLAIT_PLUGIN(NcclBackend, "nccl", "1.0.0", "cuda", plait_schema_toml,
             "GPU collectives and send/recv through LibTorch's ProcessGroupNCCL")
