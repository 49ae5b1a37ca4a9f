#pragma once
// The flight recorder: each rank keeps its last collectives and sends/receives in a ring,
// numbered per group as every member numbers them (the k-th collective on dp.1 is #k on
// each of its ranks; sends and receives are numbered per group and peer), with what they
// moved, who asked, and when they were issued, waited for and done. Written into the run
// folder (flight/rank-<r>.json) when the rank fails, is stopped, or gets SIGUSR1;
// debug/flight_report.hpp matches the ranks' records and names the culprit of a hang or
// a desync. Free of LibTorch, so that the launcher can read what it writes.
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace plait {

enum class FlightState { issued, started, completed, failed };
const char* flight_state_name(FlightState state);

struct FlightOp {
  uint64_t seq = 0;  // on its group (collectives), or its group, peer and direction (sends; receives), from 1
  std::string group;
  const char* op = "";     // "all_reduce", "send", ... (a literal)
  const char* dtype = "";  // "float32", ... (a literal)
  int64_t bytes = 0;
  int peer = -1;  // a send's or receive's other end, as a global rank; -1 for a collective
  std::string plugin, phase, unit;
  int64_t microbatch = -1;
  int64_t step = 0;  // the training step it belongs to (0: before the first)
  FlightState state = FlightState::issued;
  int64_t issued_us = 0, started_us = 0, ended_us = 0;  // wall clock, microseconds since the epoch; 0: not yet
};

class FlightRecorder {
 public:
  explicit FlightRecorder(std::size_t capacity);

  // A group's global ranks, once, when it is connected.
  void add_group(const std::string& group, const std::vector<int>& ranks);
  // Numbers the operation on its group (and peer) and keeps it; returns its handle.
  uint64_t issued(FlightOp op);
  // The host began to wait for it; it completed; it failed (a timeout, a peer gone).
  void started(uint64_t handle);
  void completed(uint64_t handle);
  void failed(uint64_t handle);
  void set_step(int64_t step);
  // How many collectives were issued on `group` (the next one is this + 1).
  uint64_t collectives_on(const std::string& group) const;

  // The ring as JSON text: rank, reason, the time written, each group's ranks and how many
  // collectives were issued on it (and sends/receives per peer), and the operations
  // oldest first.
  std::string to_json(int rank, const std::string& reason) const;
  std::string to_json_locked(int rank, const std::string& reason) const;  // the caller holds mutex_
  // Writes it to <run folder>/flight/rank-<rank>.json (whole: temporary name, then rename);
  // false when it could not be written, or, with `wait` false, when the ring was busy.
  bool write(const std::string& run_folder, int rank, const std::string& reason, bool wait = true) const;

  static int64_t now_us();

 private:
  void mark(uint64_t handle, FlightState state);

  mutable std::mutex mutex_;
  std::vector<FlightOp> ring_;
  uint64_t next_handle_ = 0;  // ring_[handle % capacity] holds the op while it is among the last
  std::map<std::string, std::vector<int>> groups_;
  std::map<std::string, uint64_t> collectives_;           // group -> last number
  // (group, peer, is a send) -> last number: a rank's k-th send to a peer meets the peer's
  // k-th receive from it, whatever the order the two issue their sends and receives in.
  std::map<std::tuple<std::string, int, bool>, uint64_t> p2p_;
  int64_t step_ = 0;
};

// The recorder of this process's ranks' operations (null when none: one process), so that
// a signal's watcher can write it out.
void set_process_flight_recorder(FlightRecorder* recorder, std::string run_folder, int rank);
// Writes the process's recorder with `reason`, if there is one; false otherwise.
bool write_process_flight_record(const std::string& reason);

// SIGUSR1 asks a rank for its flight record (plait debug on a running job): the handler
// only notes it, and the world's watchdog writes it (take_flight_signal() says once).
void install_flight_signal();
bool take_flight_signal();

// A rank that crashes (SIGSEGV, SIGABRT from an assertion in a backend, SIGBUS, SIGFPE,
// SIGILL) writes its record too, as a last act: best effort (nothing is waited for, so
// a crash inside the recorder itself cannot deadlock it), then it dies of the signal.
void install_crash_flight_record();

}  // namespace plait
