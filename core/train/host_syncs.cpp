#include "train/host_syncs.hpp"

#include <atomic>
#include <string_view>

#include <ATen/record_function.h>

#include "train/cuda_syncs.hpp"

namespace plait {
namespace {

std::atomic<int64_t> waits{0};
thread_local int counted_reads_here = 0;
// On a GPU CUDA's sync-debug mode counts the waits (cuda_syncs.hpp); the operator observer
// then counts only what that mode cannot see: a non-blocking upload from pageable memory,
// which CUDA stages through the host before it returns.
std::atomic<bool> cuda_watched{false};

void count_cuda_sync() {
  if (counted_reads_here == 0) waits.fetch_add(1, std::memory_order_relaxed);
}

// The operations after which the host holds a device value (on the CPU they wait for
// nothing, but they are the same calls, so a run here finds what would stall a GPU), and
// the uploads that hold the host until the copy is done.
bool waits_for_device(const at::RecordFunction& fn, bool cuda) {
  const std::string_view name = fn.name();
  if (!cuda && (name == "aten::_local_scalar_dense" || name == "aten::equal" || name == "aten::nonzero")) return true;
  if (name != "aten::copy_") return false;
  const auto in = fn.inputs();
  if (in.size() < 2 || !in[0].isTensor() || !in[1].isTensor()) return false;
  const at::Tensor& to = in[0].toTensor();
  const at::Tensor& from = in[1].toTensor();
  const bool non_blocking = in.size() >= 3 && in[2].isBool() && in[2].toBool();
  const bool from_pinned = from.is_cpu() && non_blocking && from.is_pinned();
  if (cuda) return to.is_cuda() && from.is_cpu() && non_blocking && !from_pinned;
  return copy_waits_for_device(to.is_cpu(), from.is_cpu(), non_blocking, from_pinned);
}

}  // namespace

bool copy_waits_for_device(bool to_host, bool from_host, bool non_blocking, bool from_pinned) {
  if (to_host && !from_host) return true;              // a read: the host holds the value
  if (!to_host && from_host) return !(non_blocking && from_pinned);  // an upload the host waits out
  return false;                                        // within one side
}

namespace {

std::unique_ptr<at::ObserverContext> on_op(const at::RecordFunction& fn) {
  const bool cuda = cuda_watched.load(std::memory_order_relaxed);
  if (cuda) count_cuda_syncs_on_this_thread();  // autograd's device threads too
  if (counted_reads_here == 0 && waits_for_device(fn, cuda)) waits.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

}  // namespace

HostSyncCounter::~HostSyncCounter() {
  if (handle_ != 0) at::removeCallback(handle_);
  if (cuda_watched.exchange(false)) stop_watching_cuda_syncs();
}

void HostSyncCounter::start(const c10::Device& device) {
  if (handle_ != 0) return;
  if (device.is_cuda()) cuda_watched = watch_cuda_syncs(&count_cuda_sync);
  handle_ = at::addGlobalCallback(
      at::RecordFunctionCallback(&on_op).needsInputs(true).scopes({at::RecordScope::FUNCTION}));
}

int64_t HostSyncCounter::take() { return waits.exchange(0, std::memory_order_relaxed); }

CountedRead::CountedRead() { ++counted_reads_here; }
CountedRead::~CountedRead() { --counted_reads_here; }

}  // namespace plait
