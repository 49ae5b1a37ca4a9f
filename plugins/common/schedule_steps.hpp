#pragma once
// The pieces gpipe and 1f1b emit: a forward with its receive before and its send after,
// a backward likewise. Adjacent transfers form one group (a forward's send with the next
// backward's receive in 1F1B's steady state), which is what NCCL's order needs for these
// schedules (see sdk/include/plait/sdk/pipeline.hpp).
#include <vector>

#include "plait/sdk/pipeline.hpp"

namespace plait::schedules {

inline void add_forward(std::vector<Action>& out, int64_t stage, int64_t microbatch, int64_t stages) {
  if (stage > 0) out.push_back({ActionType::recv_activation, stage, microbatch});
  out.push_back({ActionType::forward, stage, microbatch});
  if (stage < stages - 1) out.push_back({ActionType::send_activation, stage, microbatch});
}

// The idle share of a flush schedule (every rank finishes its backwards before the
// update) with v stages per rank, a forward costing 1 and a backward 2: (p-1)/(v*m+p-1).
// GPipe and 1F1B (v = 1) and interleaved 1F1B share it.
inline double flush_idle_share(const ScheduleSpec& spec) {
  const auto p = static_cast<double>(spec.pp), m = static_cast<double>(spec.microbatches),
             v = static_cast<double>(spec.stages_per_rank);
  return (p - 1.0) / (v * m + p - 1.0);
}

inline void add_backward(std::vector<Action>& out, int64_t stage, int64_t microbatch, int64_t stages) {
  if (stage < stages - 1) out.push_back({ActionType::recv_grad, stage, microbatch});
  out.push_back({ActionType::backward, stage, microbatch});
  if (stage > 0) out.push_back({ActionType::send_grad, stage, microbatch});
}

}  // namespace plait::schedules
