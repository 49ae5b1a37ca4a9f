#pragma once
// Waits for the device that bypass the core's reader (debug.count_host_syncs): an
// `.item()`, an `equal`, a `nonzero`, a device-to-host copy or an upload the host waits
// out (a host-to-device copy that is not non-blocking from pinned memory) anywhere on this rank,
// found by a global RecordFunction observer, so that `plait verify` can hold a plugin to
// the one-read-per-step rule it cannot see through the HostReader it was handed. On a GPU
// CUDA's sync-debug mode adds every stream, event and device synchronise (cuda_syncs.hpp).
// Off, nothing is observed and nothing costs.
#include <cstdint>

#include <c10/core/Device.h>

namespace plait {

// Whether a copy holds the host until the device is done with it: every read back, and
// every upload but a non-blocking one from pinned memory (from pageable memory CUDA
// stages the copy through the host and returns only once it is staged).
bool copy_waits_for_device(bool to_host, bool from_host, bool non_blocking, bool from_pinned);

class HostSyncCounter {
 public:
  HostSyncCounter() = default;
  HostSyncCounter(const HostSyncCounter&) = delete;
  HostSyncCounter& operator=(const HostSyncCounter&) = delete;
  ~HostSyncCounter();

  // On a CUDA device, CUDA's own sync-debug warnings are counted too.
  void start(const c10::Device& device);
  bool started() const { return handle_ != 0; }
  // Waits seen since the last call.
  int64_t take();

 private:
  uint64_t handle_ = 0;
};

// While one lives on a thread, what it does is the core's counted read, not a stray wait.
class CountedRead {
 public:
  CountedRead();
  ~CountedRead();
  CountedRead(const CountedRead&) = delete;
  CountedRead& operator=(const CountedRead&) = delete;
};

}  // namespace plait
