#include "pipeline/unit_backward_trace.hpp"

#include "timing/trace_recorder.hpp"

namespace plait {

void UnitBackwardTrace::watch(const Key& key, std::string label, const at::Tensor& output) {
  if (!output.requires_grad()) return;  // no backward reaches it
  auto ready = std::make_shared<std::optional<Clock::time_point>>();
  output.register_hook([ready](const at::Tensor&) { *ready = Clock::now(); });
  marks_[key].push_back({std::move(label), std::move(ready)});
}

void UnitBackwardTrace::emit(const Key& key, Clock::time_point ended) {
  auto it = marks_.find(key);
  if (it == marks_.end()) return;
  const std::vector<Mark> marks = std::move(it->second);
  marks_.erase(it);
  TraceRecorder* trace = TraceRecorder::recording();
  if (trace == nullptr) return;
  // Backward reaches the last unit first; each unit's backward lasts until the unit before
  // it is reached (a unit whose output no gradient reached is passed over).
  for (std::size_t i = marks.size(); i-- > 0;) {
    if (!marks[i].ready->has_value()) continue;
    Clock::time_point until = ended;
    for (std::size_t j = i; j-- > 0;) {
      if (marks[j].ready->has_value()) {
        until = **marks[j].ready;
        break;
      }
    }
    trace->span(TraceTrack::compute, marks[i].label, "unit", **marks[i].ready, until,
                {{"stage", key.first}, {"microbatch", key.second}});
  }
}

}  // namespace plait
