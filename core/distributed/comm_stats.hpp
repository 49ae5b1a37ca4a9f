#pragma once
// What every communicator did this step, per axis and operation: calls, payload bytes,
// bus bytes (the ring-algorithm volume one rank sends, as nccl-tests counts it:
// all-reduce 2M(n-1)/n, all-gather and reduce-scatter M(n-1)/n, broadcast and
// send/recv M), time (the device's own where the backend measures it, else issue to
// completion) and exposed time (the host blocked in wait()). Also the operations still
// in flight, for hang reports: on a GPU wait() returns before the kernel ends, so an
// operation stays in flight, held, until its completion is seen on the device.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace plait {

// What the stats ask of an operation they hold after its wait() (a handle on its Work,
// so that the stats stay free of LibTorch).
struct HeldOp {
  std::function<bool()> is_completed;
  std::function<std::optional<double>()> device_seconds;
};

struct OpCounters {
  int64_t calls = 0;
  int64_t payload_bytes = 0;
  double bus_bytes = 0.0;
  double seconds = 0.0;
  double exposed_seconds = 0.0;
};

struct PendingOp {
  uint64_t id = 0;
  std::string description;  // "all_reduce of 4.0 MiB on dp.0 for ddp grad-sync bucket 3 (microbatch 1)"
  std::chrono::steady_clock::time_point issued;
  std::function<bool()> is_completed;  // false once its handle is gone unwaited: it counts as done
  std::optional<HeldOp> held;           // after a wait() that returned early: polled until done
  bool reported = false;
};

class CommStats {
 public:
  // Records an operation at issue and returns its id for complete(). `caller` is the
  // plugin (or "core") that asked for it.
  uint64_t issue(const std::string& axis, const std::string& op, const std::string& caller, int64_t payload_bytes,
                 double bus_bytes, std::string description, std::function<bool()> is_completed);
  // Marks it done (idempotent) and adds its time: `device_seconds` where the backend
  // measured it, else the time since issue.
  void complete(uint64_t id, std::optional<double> device_seconds = std::nullopt, double exposed = 0.0);
  // After wait() returned on an accelerator, `blocked` seconds later (the exposed time):
  // completes the operation, or, when `work` is still running on the device, holds it
  // until settle() sees it done. (On the CPU, wait() returning means done: complete().)
  void waited(uint64_t id, double blocked, HeldOp work);
  // Completes the held operations that have finished on the device.
  void settle();

  // [debug] count_wire_bytes: `meter` reads the bytes this process has sent; from then on
  // each drain says how many were sent since the last (Drained::wire_bytes) and how many of
  // those while an operation was in flight (wire_bytes_in_ops), so that what is sent
  // outside them shows (traffic around the core's communicators).
  void count_wire(std::function<int64_t()> meter);
  // Before `operations` are handed to their backend (which may send at once); each is
  // then issue()d.
  void before_issue(int operations = 1);

  struct Drained {
    std::map<std::string, OpCounters> by_op;   // "<axis>.<op>"
    std::map<std::string, double> bus_bytes_by_caller;
    int64_t wire_bytes = 0, wire_bytes_in_ops = 0;
  };
  // Counters since the last drain (after a settle()).
  Drained drain();

  // Operations issued more than `age` ago and not yet complete; each is returned once.
  std::vector<std::string> newly_overdue(std::chrono::milliseconds age);
  // Every operation still in flight, oldest first.
  std::vector<std::string> in_flight();

  static double bus_factor(const std::string& op, int group_size);

 private:
  using Pending = std::map<uint64_t, std::pair<std::string, PendingOp>>;
  // Adds the op's time to its counter and forgets it; the caller holds mutex_.
  void finish(Pending::iterator it, std::optional<double> device_seconds,
              std::chrono::steady_clock::time_point now);
  void settle_locked();

  std::mutex mutex_;
  uint64_t next_id_ = 1;
  std::map<std::string, OpCounters> counters_;
  std::map<std::string, double> callers_;
  Pending pending_;  // id -> (counter key, op)
  std::function<int64_t()> wire_meter_;
  bool wire_window_open_ = false;
  int issuing_ = 0;  // between before_issue() and issue(): in flight, not yet pending
  int64_t wire_window_start_ = 0, wire_in_ops_ = 0, wire_at_drain_ = 0;
  void close_wire_window_locked();
};

}  // namespace plait
