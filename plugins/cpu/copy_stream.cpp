#include "copy_stream.hpp"

#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include "plait/sdk/error.hpp"

namespace plait::offload {
namespace {

class Done final : public CopyInFlight {
 public:
  void before_device_use() override {}
  void before_host_use() override {}
};

class OnStream final : public CopyInFlight {
 public:
  OnStream(c10::Event done, c10::Device device) : done_(std::move(done)), device_(device) {}
  void before_device_use() override { done_.block(c10::impl::VirtualGuardImpl(device_.type()).getStream(device_)); }
  void before_host_use() override { done_.synchronize(); }

 private:
  c10::Event done_;
  c10::Device device_;
};

}  // namespace

std::unique_ptr<CopyInFlight> CopyStream::copy(const at::Tensor& to, const at::Tensor& from) {
  PLAIT_CHECK(to.sizes() == from.sizes() && to.scalar_type() == from.scalar_type(),
              concat("cpu offload: a copy of ", from.sizes(), " ", from.scalar_type(), " into ", to.sizes(), " ",
                     to.scalar_type()),
              "the data plugin copies between a tensor and its own host or device copy");
  const at::Tensor& device_side = to.is_cpu() ? from : to;
  const at::Tensor& host_side = to.is_cpu() ? to : from;
  if (device_side.is_cpu() || !host_side.is_pinned()) {
    to.copy_(from);  // a host-host copy, or pageable memory the device cannot read asynchronously
    return std::make_unique<Done>();
  }
  const c10::Device device = device_side.device();
  const c10::impl::VirtualGuardImpl impl(device.type());
  const c10::Stream stream = stream_for(device);
  // The copy starts after what is queued on the current stream (the source's producer;
  // nothing to wait for when the current stream is the copy stream itself).
  c10::Event queued(device.type());
  queued.record(impl.getStream(device));
  queued.block(stream);
  c10::Event done(device.type());
  {
    const c10::StreamGuard on_copy_stream(stream);
    at::Tensor target = to;
    target.copy_(from, /*non_blocking=*/true);
    done.record(stream);
  }
  // The caching allocator must not hand the device memory out again before the copy ends.
  impl.recordDataPtrOnStream(device_side.storage().data_ptr(), stream);
  return std::make_unique<OnStream>(std::move(done), device);
}

c10::Stream CopyStream::stream_for(const c10::Device& device) {
  if (!stream_) stream_ = c10::impl::VirtualGuardImpl(device.type()).getStreamFromGlobalPool(device, /*isHighPriority=*/false);
  return *stream_;
}

void CopyStream::on_copy_stream(const c10::Device& device, const std::function<void()>& issue) {
  if (device.is_cpu() || device.is_meta()) return issue();
  const c10::StreamGuard on_copy_stream(stream_for(device));
  issue();
}

}  // namespace plait::offload
