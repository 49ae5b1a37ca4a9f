#include "train/host_syncs.hpp"

#include <atomic>
#include <string_view>

#include <ATen/record_function.h>

namespace plait {
namespace {

std::atomic<int64_t> waits{0};
thread_local int counted_reads_here = 0;

// The operations after which the host holds a device value (on the CPU they wait for
// nothing, but they are the same calls, so a run here finds what would stall a GPU), and
// the uploads that hold the host until the copy is done.
bool waits_for_device(const at::RecordFunction& fn) {
  const std::string_view name = fn.name();
  if (name == "aten::_local_scalar_dense" || name == "aten::equal" || name == "aten::nonzero") return true;
  if (name != "aten::copy_") return false;
  const auto in = fn.inputs();
  if (in.size() < 2 || !in[0].isTensor() || !in[1].isTensor()) return false;
  const at::Tensor& to = in[0].toTensor();
  const at::Tensor& from = in[1].toTensor();
  const bool non_blocking = in.size() >= 3 && in[2].isBool() && in[2].toBool();
  return copy_waits_for_device(to.is_cpu(), from.is_cpu(), non_blocking, from.is_cpu() && non_blocking && from.is_pinned());
}

}  // namespace

bool copy_waits_for_device(bool to_host, bool from_host, bool non_blocking, bool from_pinned) {
  if (to_host && !from_host) return true;              // a read: the host holds the value
  if (!to_host && from_host) return !(non_blocking && from_pinned);  // an upload the host waits out
  return false;                                        // within one side
}

namespace {

std::unique_ptr<at::ObserverContext> on_op(const at::RecordFunction& fn) {
  if (counted_reads_here == 0 && waits_for_device(fn)) waits.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

}  // namespace

HostSyncCounter::~HostSyncCounter() {
  if (handle_ != 0) at::removeCallback(handle_);
}

void HostSyncCounter::start() {
  if (handle_ != 0) return;
  handle_ = at::addGlobalCallback(
      at::RecordFunctionCallback(&on_op).needsInputs(true).scopes({at::RecordScope::FUNCTION}));
}

int64_t HostSyncCounter::take() { return waits.exchange(0, std::memory_order_relaxed); }

CountedRead::CountedRead() { ++counted_reads_here; }
CountedRead::~CountedRead() { --counted_reads_here; }

}  // namespace plait
