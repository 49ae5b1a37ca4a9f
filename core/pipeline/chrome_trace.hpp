#pragma once
// Pipeline actions as Chrome trace events (chrome://tracing, ui.perfetto.dev), for the
// nominal schedule of `plait schedule show --trace`; short_label names a forward or a
// backward in it and in the measured traces of [debug] trace_steps alike.
#include <string>

#include <nlohmann/json.hpp>

#include "plait/sdk/pipeline.hpp"

namespace plait {

// "F3", "B3", or with several stages per rank "F3b" (b: the rank's second stage).
std::string short_label(const Action& a, const ScheduleSpec& spec);

// A forward or backward as a slice; a receive with a duration as a "wait" slice; any
// other action as an instant. Times in microseconds.
nlohmann::json trace_event(const Action& a, const ScheduleSpec& spec, int pid, int tid, double start_us, double end_us);
nlohmann::json thread_name_event(int pid, int tid, const std::string& name);

// Writes {"traceEvents": events}; fails naming the path.
void write_chrome_trace(const nlohmann::json& events, const std::string& path);

}  // namespace plait
