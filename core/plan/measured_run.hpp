#pragma once
// A run's own figures, in the planner's terms, for `plait plan --against RUN`: the median
// over its recorded steps (the first left out when there are more: it warms up) of each
// phase's time (time.<phase>_ms, the exposed communication by axis), tokens/s per rank,
// and rank 0's state and activation bytes and peak memory.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "plan/hardware.hpp"

namespace plait {

struct MeasuredRun {
  std::string folder;
  std::string config;  // its config.lock.toml
  std::string device;  // what it ran on: the lock's [train] device ("cpu", "cuda")
  int64_t steps = 0;   // the steps the medians are over
  std::map<std::string, double> phase_ms;  // forward, backward, optimizer, ..., comm.dp, comm.tp, comm.pp, comm.other
  double step_ms = 0;
  double tokens_per_s = 0;  // the whole job's
  int64_t param_bytes = 0, grad_bytes = 0, optimizer_bytes = 0, activation_bytes = 0, peak_mem_bytes = 0;
};

// Refuses a folder that is not a run (no config.lock.toml or no recorded step) and a run
// that timed no phases ([train] phase_timing = false), naming the folder.
MeasuredRun read_measured_run(const std::string& folder);

// A warning, in one sentence, where runs measured on one kind of device (`devices`, one a
// run) are set beside a hardware file that describes another (CPU runs beside an H100's
// figures): the ratios then compare two machines, not a prediction with its run. Empty
// when they agree.
std::string measured_elsewhere(const Hardware& hw, const std::vector<std::string>& devices);

}  // namespace plait
