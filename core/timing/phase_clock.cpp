#include "timing/phase_clock.hpp"

#include <algorithm>

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

PhaseClock::PhaseClock() : lap_start_(Clock::now()) { open_.reserve(8); }

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
  open_.push_back({phase, comm_key, Clock::now(), 0.0});
  ++times_.scopes;
}

void PhaseClock::close() {
  const Open o = open_.back();
  open_.pop_back();
  // A scope opened before the last lap is charged only for its part in this interval.
  const auto now = Clock::now();
  const double whole = seconds_between(std::max(o.start, lap_start_), now);
  const double own = std::max(0.0, whole - o.nested_s);
  times_.seconds[static_cast<std::size_t>(o.phase)] += own;
  if (o.phase == Phase::comm_exposed) {
    auto it = times_.comm_s.find(o.comm_key);
    if (it == times_.comm_s.end()) it = times_.comm_s.emplace(std::string(o.comm_key), 0.0).first;
    it->second += own;
  }
  if (!open_.empty()) open_.back().nested_s += whole;
  if (TraceRecorder* trace = TraceRecorder::recording()) {
    const std::string name =
        o.phase == Phase::comm_exposed ? "wait " + std::string(o.comm_key) : std::string(phase_name(o.phase));
    trace->span(TraceTrack::phases, name, "phase", o.start, now);
  }
}

PhaseTimes PhaseClock::lap() {
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
