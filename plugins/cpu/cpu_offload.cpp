// Host-memory offload (ZeRO-Offload's split): optimizer state and fp32 master weights,
// the reduced gradient shards, and optionally the stage-3 parameter shards live in host
// memory, and the optimizer update runs on the host. Everything it allocates is
// counted as host memory by the runtime's books, so a CPU-only run shows the split too.
#include "copy_stream.hpp"
#include "plait/sdk/sdk.hpp"
#include "plait_options.hpp"
#include "plait_schema.hpp"

namespace {

class CpuOffload final : public plait::Offload, public plait::CopyStreamIssue {
 public:
  bool offloads(plait::StateRole role) const override {
    return role != plait::StateRole::param || params_;
  }

  at::Tensor to_host(const at::Tensor& tensor) override {
    plait::HostMemoryScope scope(context().memory);
    const bool pin = pin_ && tensor.is_cuda();
    at::Tensor host = at::empty(tensor.sizes(), tensor.options().device(at::kCPU).pinned_memory(pin));
    host.copy_(tensor);
    if (context().metrics != nullptr) context().metrics->count("d2h_bytes", static_cast<double>(host.nbytes()));
    return host;
  }

  void run_on_host(const std::function<void()>& work) override {
    plait::HostMemoryScope scope(context().memory);
    work();
  }

  std::unique_ptr<plait::CopyInFlight> copy(const at::Tensor& to, const at::Tensor& from) override {
    return copies_.copy(to, from);  // the data plugin counts what it moves
  }

  void on_copy_stream(const c10::Device& device, const std::function<void()>& issue) override {
    copies_.on_copy_stream(device, issue);
  }
  void* find_extension(std::string_view id) override { return plait::offer<plait::CopyStreamIssue>(this, id); }

 protected:
  void on_configure() override {
    const auto cpu = plait_options::Options::from(options());  // [cpu], typed from schema.toml
    params_ = cpu.params;
    pin_ = cpu.pin_memory;
  }

 private:
  bool params_ = false;
  bool pin_ = true;
  plait::offload::CopyStream copies_;
};

}  // namespace

PLAIT_PLUGIN(CpuOffload, "cpu", "1.0.0", "", plait_schema_toml,
             "offload: optimizer state, master weights and gradient shards in host memory, update on the host")
