#pragma once
// Waits for the device that bypass the core's reader (debug.count_host_syncs): an
// `.item()`, an `equal`, a `nonzero` or a device-to-host copy anywhere on this rank,
// found by a global RecordFunction observer, so that `plait verify` can hold a plugin to
// the one-read-per-step rule it cannot see through the HostReader it was handed. Off,
// nothing is observed and nothing costs.
#include <cstdint>

namespace plait {

class HostSyncCounter {
 public:
  HostSyncCounter() = default;
  HostSyncCounter(const HostSyncCounter&) = delete;
  HostSyncCounter& operator=(const HostSyncCounter&) = delete;
  ~HostSyncCounter();

  void start();
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
