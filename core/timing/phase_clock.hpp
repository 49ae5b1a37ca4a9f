#pragma once
// Where a step's time goes. The thread that trains installs a PhaseClock; code on that
// thread opens PhaseScopes around what it does (a forward, a wait for a collective, the
// optimizer step). A scope's time is exclusive: what a nested scope took is charged to
// it, not to the scope around it, so the phases of an interval add up to its length,
// with `other` the time outside every scope. Waits inside an absorbing phase (pipeline
// idle, a checkpoint, the metrics report, data loading) stay that phase's. Scopes opened
// on any other thread, or with no clock installed, cost a thread-local read and time
// nothing.
//
// On a GPU (a clock given a stream marker) a scope's time is the stream's: a mark on the
// current stream where it opens and where it closes, read once the device has passed
// both (never waited for). A scope is charged to the first lap that finds its marks
// passed, so a step's tail the device had not finished at its lap (its update's kernels)
// counts in the next step's figures; the total and `other` stay the host's interval.
#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "timing/stream_mark.hpp"

namespace plait {

enum class Phase : uint8_t {
  forward,        // forward compute (a pipeline's units, the loss)
  backward,       // backward compute, recomputation included
  comm_exposed,   // blocked in a collective's or a transfer's wait, by "<axis>.<op>"
  pipeline_idle,  // waiting for another pipeline stage: receives, the step's last sends, span barriers
  optimizer,      // the data plugin's step: norm, update, its own state traffic's compute
  data,           // drawing the step's batches
  checkpoint,     // saving, and an async save's copy the update waits for
  metrics,        // reporting a step: gathering the ranks' figures, writing records
  other,          // the rest of the interval
};
inline constexpr std::size_t kPhaseCount = 9;
// "forward", "comm_exposed", ...: the <phase> of time.<phase>_ms.
const char* phase_name(Phase phase);

// One interval's time by phase, in seconds.
struct PhaseTimes {
  double total_s = 0.0;
  std::array<double, kPhaseCount> seconds{};
  std::map<std::string, double, std::less<>> comm_s;  // comm_exposed by "<axis>.<op>"
  int64_t scopes = 0;                                 // scopes timed (the clock's own cost is per scope)
  double of(Phase p) const { return seconds[static_cast<std::size_t>(p)]; }
};

class PhaseClock {
 public:
  // The first interval starts now. With a marker, scopes are timed on the device's stream.
  explicit PhaseClock(StreamMarker marker = {});
  ~PhaseClock();
  PhaseClock(const PhaseClock&) = delete;
  PhaseClock& operator=(const PhaseClock&) = delete;
  // Makes this the calling thread's clock, until destroyed.
  void install();
  // The interval since the last lap (or construction) by phase; the next starts now.
  // Scopes still open are charged from here on.
  PhaseTimes lap();

 private:
  friend class PhaseScope;
  using Clock = std::chrono::steady_clock;
  struct Open {
    Phase phase;
    std::string_view comm_key;
    Clock::time_point start;
    double nested_s;  // what scopes inside it took
    std::unique_ptr<StreamMark> mark;   // with a marker: where the stream was at the open
    std::vector<std::size_t> children;  // with a marker: closed scopes inside it (into marked_)
  };
  // A closed scope timed on the stream, waiting for the device to pass its marks.
  struct Marked {
    Phase phase;
    std::string comm_key;
    std::unique_ptr<StreamMark> begin, end;
    std::vector<std::size_t> children;
    double whole_s = -1.0;  // once read
  };
  bool absorbing() const;
  void open(Phase phase, std::string_view comm_key);
  void close();
  void charge(Phase phase, std::string_view comm_key, double own_s);
  void read_passed_marks();

  StreamMarker marker_;
  std::vector<Open> open_;
  std::vector<Marked> marked_;  // in closing order: a scope's children before it
  PhaseTimes times_;
  Clock::time_point lap_start_;
  bool installed_ = false;
};

// Times its lifetime as `phase` on this thread's clock. `comm_key` (with comm_exposed)
// must outlive the scope.
class PhaseScope {
 public:
  explicit PhaseScope(Phase phase, std::string_view comm_key = {});
  ~PhaseScope();
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  PhaseClock* clock_ = nullptr;
};

}  // namespace plait
