#include "pipeline/chrome_trace.hpp"

#include <fstream>

#include "plait/sdk/error.hpp"

namespace plait {

std::string short_label(const Action& a, const ScheduleSpec& spec) {
  std::string out = (a.type == ActionType::forward ? "F" : "B") + std::to_string(a.microbatch);
  if (spec.stages_per_rank > 1) out += static_cast<char>('a' + a.stage / spec.pp);
  return out;
}

nlohmann::json trace_event(const Action& a, const ScheduleSpec& spec, int pid, int tid, double start_us, double end_us) {
  const bool compute = a.type == ActionType::forward || a.type == ActionType::backward;
  const bool wait = !compute && end_us > start_us;
  nlohmann::json e = {{"name", compute ? short_label(a, spec) : wait ? concat("wait ", action_name(a.type))
                                                                      : std::string(action_name(a.type))},
                      {"cat", wait ? "wait" : action_name(a.type)},
                      {"ph", compute || wait ? "X" : "i"},
                      {"pid", pid},
                      {"tid", tid},
                      {"ts", start_us},
                      {"args", {{"stage", a.stage}, {"microbatch", a.microbatch}}}};
  if (compute || wait) {
    e["dur"] = end_us - start_us;
  } else {
    e["s"] = "t";
  }
  return e;
}

nlohmann::json thread_name_event(int pid, int tid, const std::string& name) {
  return {{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

void write_chrome_trace(const nlohmann::json& events, const std::string& path) {
  std::ofstream out(path);
  PLAIT_CHECK(out.good(), concat("cannot write the trace to ", path), "check the folder exists and is writable");
  out << nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump(1) << "\n";
}

}  // namespace plait
