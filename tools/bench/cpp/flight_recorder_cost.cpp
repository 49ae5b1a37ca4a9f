// What the flight recorder costs each communication operation: nanoseconds for one
// operation's life in the ring (issued with its tag, started, completed), the median of
// several rounds, at the default ring size and a large one. Multiplied by the operations
// of a step (metrics.jsonl's comm counts), it is the recorder's share of the step.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "distributed/flight_recorder.hpp"

namespace {

double ns_per_op(std::size_t capacity, int n) {
  plait::FlightRecorder recorder(capacity);
  recorder.add_group("dp.0", {0, 1, 2, 3});
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    plait::FlightOp op;
    op.group = "dp.0";
    op.op = "all_reduce";
    op.dtype = "float32";
    op.bytes = 4 << 20;
    op.plugin = "ddp";
    op.phase = "grad-sync";
    op.unit = "bucket 3";
    op.microbatch = i % 4;
    const uint64_t h = recorder.issued(std::move(op));
    recorder.started(h);
    recorder.completed(h);
  }
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() / n;
}

double median_of(std::size_t capacity) {
  std::vector<double> rounds;
  for (int r = 0; r < 7; ++r) rounds.push_back(ns_per_op(capacity, 500'000));
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

}  // namespace

int main() {
  for (std::size_t capacity : {std::size_t{4096}, std::size_t{1} << 20}) {
    std::printf("flight recorder, ring of %zu: %.0f ns per operation (issued, started, completed; median of 7 rounds)\n",
                capacity, median_of(capacity));
  }
  return 0;
}
