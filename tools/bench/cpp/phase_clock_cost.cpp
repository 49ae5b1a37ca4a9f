// What timing a step's phases costs: nanoseconds per PhaseScope (open and close) on a
// thread with a clock installed, and on one without (every scope of a run with
// [train] phase_timing = false). Multiplied by a step's scopes (time.scopes in
// metrics.jsonl), it is the timing's share of the step; tools/bench/metrics_scaling.py
// runs it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "timing/phase_clock.hpp"

namespace {

double ns_per_scope(int n) {
  const std::string key = "dp.all_reduce";
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    const plait::PhaseScope outer(plait::Phase::forward);
    const plait::PhaseScope inner(plait::Phase::comm_exposed, key);
  }
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() / (2.0 * n);
}

}  // namespace

int main() {
  constexpr int kScopes = 2'000'000;
  const double off = ns_per_scope(kScopes);
  plait::PhaseClock clock;
  clock.install();
  double on = 1e300;
  for (int round = 0; round < 5; ++round) {
    on = std::min(on, ns_per_scope(kScopes));
    clock.lap();
  }
  std::printf("{\"ns_per_scope_timed\": %.1f, \"ns_per_scope_untimed\": %.1f}\n", on, off);
  return 0;
}
