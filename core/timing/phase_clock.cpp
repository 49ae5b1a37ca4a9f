#include "timing/phase_clock.hpp"

#include <algorithm>
#include <utility>

#include "timing/trace_recorder.hpp"

namespace plait {
namespace {

thread_local PhaseClock* t_clock = nullptr;

double seconds_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

const char* phase_name(Phase phase) {
  switch (phase) {
    case Phase::forward: return "forward";
    case Phase::backward: return "backward";
    case Phase::comm_exposed: return "comm_exposed";
    case Phase::pipeline_idle: return "pipeline_idle";
    case Phase::optimizer: return "optimizer";
    case Phase::data: return "data";
    case Phase::checkpoint: return "checkpoint";
    case Phase::metrics: return "metrics";
    case Phase::other: return "other";
  }
  return "other";
}

PhaseClock::PhaseClock(StreamMarker marker) : marker_(std::move(marker)), lap_start_(Clock::now()) { open_.reserve(8); }

PhaseClock::~PhaseClock() {
  if (installed_ && t_clock == this) t_clock = nullptr;
}

void PhaseClock::install() {
  t_clock = this;
  installed_ = true;
}

bool PhaseClock::absorbing() const {
  if (open_.empty()) return false;
  const Phase p = open_.back().phase;
  return p == Phase::pipeline_idle || p == Phase::checkpoint || p == Phase::metrics || p == Phase::data ||
         p == Phase::comm_exposed;
}

void PhaseClock::open(Phase phase, std::string_view comm_key) {
  open_.push_back({phase, comm_key, Clock::now(), 0.0, marker_ ? marker_() : nullptr, {}});
  ++times_.scopes;
}

void PhaseClock::charge(Phase phase, std::string_view comm_key, double own_s) {
  times_.seconds[static_cast<std::size_t>(phase)] += own_s;
  if (phase == Phase::comm_exposed) {
    auto it = times_.comm_s.find(comm_key);
    if (it == times_.comm_s.end()) it = times_.comm_s.emplace(std::string(comm_key), 0.0).first;
    it->second += own_s;
  }
}

void PhaseClock::close() {
  Open o = std::move(open_.back());
  open_.pop_back();
  const auto now = Clock::now();
  if (o.mark) {  // the stream's time, read once the device has passed both marks
    marked_.push_back({o.phase, std::string(o.comm_key), std::move(o.mark), marker_(), std::move(o.children)});
    if (!open_.empty()) open_.back().children.push_back(marked_.size() - 1);
  } else {
    // A scope opened before the last lap is charged only for its part in this interval.
    const double whole = seconds_between(std::max(o.start, lap_start_), now);
    charge(o.phase, o.comm_key, std::max(0.0, whole - o.nested_s));
    if (!open_.empty()) open_.back().nested_s += whole;
  }
  if (TraceRecorder* trace = TraceRecorder::recording()) {
    const std::string name =
        o.phase == Phase::comm_exposed ? "wait " + std::string(o.comm_key) : std::string(phase_name(o.phase));
    trace->span(TraceTrack::phases, name, "phase", o.start, now);
  }
}

// Charges each closed scope whose marks the device has passed (its children closed
// before it, so they are read first) and keeps the rest for a later lap. Once no open
// scope or unread one refers to them, read scopes are dropped.
void PhaseClock::read_passed_marks() {
  for (Marked& m : marked_) {
    if (m.whole_s >= 0.0 || !m.end->passed() || !m.begin->passed()) continue;
    double nested = 0.0;
    bool children_read = true;
    for (std::size_t c : m.children) {
      children_read = children_read && marked_[c].whole_s >= 0.0;
      nested += marked_[c].whole_s;
    }
    if (!children_read) continue;
    m.whole_s = m.end->seconds_since(*m.begin);
    charge(m.phase, m.comm_key, std::max(0.0, m.whole_s - nested));
  }
  const bool all_read = std::all_of(marked_.begin(), marked_.end(), [](const Marked& m) { return m.whole_s >= 0.0; });
  const bool none_open_holds =
      std::all_of(open_.begin(), open_.end(), [](const Open& o) { return o.children.empty(); });
  if (all_read && none_open_holds) marked_.clear();
}

PhaseTimes PhaseClock::lap() {
  if (!marked_.empty()) read_passed_marks();
  const auto now = Clock::now();
  PhaseTimes out = std::move(times_);
  times_ = PhaseTimes{};
  out.total_s = seconds_between(lap_start_, now);
  double named = 0.0;
  for (std::size_t p = 0; p < kPhaseCount; ++p) {
    if (static_cast<Phase>(p) != Phase::other) named += out.seconds[p];
  }
  out.seconds[static_cast<std::size_t>(Phase::other)] = std::max(0.0, out.total_s - named);
  lap_start_ = now;
  for (Open& o : open_) o.nested_s = 0.0;  // what nested scopes took was charged to the last interval
  return out;
}

PhaseScope::PhaseScope(Phase phase, std::string_view comm_key) {
  PhaseClock* clock = t_clock;
  if (clock == nullptr || clock->absorbing()) return;
  clock_ = clock;
  clock_->open(phase, comm_key);
}

PhaseScope::~PhaseScope() {
  if (clock_ != nullptr) clock_->close();
}

}  // namespace plait
