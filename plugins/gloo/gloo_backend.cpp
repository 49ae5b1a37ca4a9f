// The CPU communicator: LibTorch's c10d ProcessGroupGloo behind plait's Communicator.
// Rendezvous goes through the job's TCP store under the group's own key prefix.
#include <net/if.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "plait/c10d/address.hpp"
#include "plait/c10d/communicator.hpp"
#include "nccl_order.hpp"
#include "plait/sdk/sdk.hpp"
#include "plait_options.hpp"
#include "plait_schema.hpp"

namespace {

class GlooBackend final : public plait::CommBackend {
 public:
  void check(const plait::RunCheck& run) const override {
    PLAIT_CHECK(run.train->get<std::string>("device") == "cpu",
                plait::concat(run.train->where("device"), ": [train] device = \"", run.train->get<std::string>("device"),
                              "\", but the gloo communicator ([parallel] comm = \"gloo\") moves CPU tensors"),
                "set [parallel] comm = \"nccl\" for GPUs");
    if (auto name = plait_options::Options::from(options()).interface) {
      PLAIT_CHECK(::if_nametoindex(name->c_str()) != 0,
                  plait::concat(options().where("interface"), ": [gloo] interface = \"", *name,
                                "\": this machine has no network interface of that name"),
                  "`ip link` lists the interfaces; leave the key out to use the one that routes to the master");
    }
  }
  std::shared_ptr<plait::Communicator> connect(const plait::GroupSpec& spec) override {
    PLAIT_CHECK(spec.device == "cpu", plait::concat("gloo moves CPU tensors; group ", spec.name, " is on ", spec.device),
                "use the nccl communicator for CUDA tensors");
    // Connecting the pairs gets setup's time; the operations get spec.timeout, set once
    // connected.
    auto options = c10d::ProcessGroupGloo::Options::create(plait::c10d_comm::connect_timeout(spec));
    options->devices = {interface_.empty() ? c10d::ProcessGroupGloo::createDeviceForHostname(
                                                 plait::c10d_comm::local_address_towards(spec.store_host, spec.store_port, "gloo"))
                                           : c10d::ProcessGroupGloo::createDeviceForInterface(interface_)};
    options->threads = threads_;
    const int size = static_cast<int>(spec.ranks.size());
    auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(plait::c10d_comm::group_store(spec), spec.group_rank, size,
                                                          options);
    pg->setTimeout(spec.timeout);
    auto gloo = std::make_shared<plait::c10d_comm::C10dCommunicator>(std::move(pg), "gloo", spec.group_rank, size,
                                                                     /*supports_avg=*/false);
    if (!nccl_order_) return gloo;
    return plait::gloo_plugin::with_nccl_p2p_order(std::move(gloo), spec.name, spec.timeout);
  }

 protected:
  void on_configure() override {
    const auto gloo = plait_options::Options::from(options());  // [gloo], typed from schema.toml
    threads_ = static_cast<int>(gloo.threads);
    interface_ = gloo.interface.value_or("");
    nccl_order_ = gloo.p2p == plait_options::Options::P2p::nccl;
  }

 private:
  int threads_ = 2;
  std::string interface_;
  bool nccl_order_ = false;
};

}  // namespace

PLAIT_PLUGIN(GlooBackend, "gloo", "1.0.0", "cpu", plait_schema_toml,
             "CPU collectives and send/recv through LibTorch's ProcessGroupGloo")
