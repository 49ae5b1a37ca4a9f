#pragma once
// A straggler, named while the job runs: each recorded step, rank 0 has every rank's own
// time per step (its step time less the time it waited in communication, i.e. what the
// others would wait for), and a rank whose median over the last recorded steps is well
// above the median rank's is reported as it starts lagging and when it stops. Waiting
// ranks all show about the same own time; the one they wait for shows more.
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace plait {

struct Straggler {
  int rank = 0;
  double own_ms = 0.0;     // its median own time per step over the window
  double median_ms = 0.0;  // the median rank's
  int steps = 0;           // recorded steps in the window
};

class StragglerWatch {
 public:
  // A rank lags when its own time is over `ratio` times the median rank's and at least
  // `min_gap_ms` more, over the last `window` recorded steps (and at least 3 of them).
  explicit StragglerWatch(int window = 10, double ratio = 1.5, double min_gap_ms = 20.0)
      : window_(window), ratio_(ratio), min_gap_ms_(min_gap_ms) {}

  // Each rank's own milliseconds per step at one recorded step (index = rank); the
  // straggler now, if there is one.
  std::optional<Straggler> add(const std::vector<double>& own_ms);

  // What changed since the last call, as a log line: a rank began or stopped lagging (empty: nothing new).
  std::string change(const std::optional<Straggler>& now, int64_t step);

 private:
  int window_;
  double ratio_, min_gap_ms_;
  std::deque<std::vector<double>> recent_;
  std::optional<int> reported_;  // the rank last reported as lagging
};

}  // namespace plait
