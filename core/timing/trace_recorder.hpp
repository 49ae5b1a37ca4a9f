#pragma once
// Where the steps of [debug] trace_steps go, as they run, in Chrome's trace event format
// (chrome://tracing, ui.perfetto.dev, Holistic Trace Analysis): one recorder per rank
// process, on only during a traced step. The executor's forwards and backwards (and
// each unit's forward and backward inside them), the step's phases, every collective as an async
// event from issue to completion, and every send and receive as a slice with a flow
// arrow from the sender's to the receiver's. Times are microseconds of the monotonic
// clock, which every process of a machine shares.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

namespace plait {

enum class TraceTrack : int { compute = 1, phases = 2, transfers = 3 };

class TraceRecorder {
 public:
  using Clock = std::chrono::steady_clock;
  // Becomes the process's recorder until destroyed.
  explicit TraceRecorder(int rank);
  ~TraceRecorder();
  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;

  // The process's recorder when it is recording (a traced step is running), else null:
  // what every hook asks first.
  static TraceRecorder* recording();

  void start(int64_t step);
  // This rank's events of the step, and recording stops.
  nlohmann::json stop();

  static double micros(Clock::time_point t);
  void span(TraceTrack track, const std::string& name, const std::string& category, Clock::time_point start,
            Clock::time_point end, nlohmann::json args = nlohmann::json::object());
  // A collective from issue to completion, on a track of its own; returns its id for end.
  uint64_t collective(const std::string& name, nlohmann::json args, Clock::time_point issued);
  void collective_done(uint64_t id, Clock::time_point done);
  // A send or receive between global ranks `from` and `to` with a message tag: a slice on
  // the transfers track and a flow linking the n-th message of that tag from `from` to `to`
  // on both sides.
  void transfer(bool is_send, int from, int to, int tag, const std::string& name, nlohmann::json args,
                Clock::time_point issued, Clock::time_point done);

 private:
  int rank_;
  std::atomic<bool> on_{false};
  std::mutex mutex_;
  int64_t step_ = 0;
  nlohmann::json events_ = nlohmann::json::array();
  uint64_t next_id_ = 1;
  std::map<uint64_t, std::string> open_;  // collective id -> its name (the end event repeats it)
  std::map<std::tuple<bool, int, int, int>, int64_t> seen_;  // (send?, from, to, tag) -> messages so far
};

// Times a span on the compute track while the recorder is on; costs one atomic load otherwise.
class TraceSpan {
 public:
  TraceSpan(const char* category, std::string name);
  ~TraceSpan();
  TraceSpan(const TraceSpan&) = delete;
  TraceSpan& operator=(const TraceSpan&) = delete;

 private:
  TraceRecorder* recorder_ = nullptr;
  const char* category_;
  std::string name_;
  TraceRecorder::Clock::time_point start_;
};

}  // namespace plait
