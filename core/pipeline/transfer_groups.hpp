#pragma once
// How the executor posts a rank's sends and receives: each run of consecutive transfer
// actions in its list (no compute between them) is one batch_p2p group, as Megatron's
// send_forward_recv_backward is. Under NCCL a group's operations progress together, and
// the groups of a rank run one after another; the schedule checker plays the lists
// with the same groups, so what it accepts cannot deadlock there.
#include <cstddef>
#include <vector>

#include "plait/sdk/pipeline.hpp"

namespace plait {

inline bool is_transfer(ActionType t) {
  return t == ActionType::send_activation || t == ActionType::recv_activation || t == ActionType::send_grad ||
         t == ActionType::recv_grad;
}

inline bool is_send(ActionType t) { return t == ActionType::send_activation || t == ActionType::send_grad; }

// The stage at the other end of a transfer action.
inline int64_t peer_stage(const Action& a) {
  const bool forward_edge = a.type == ActionType::send_activation || a.type == ActionType::recv_grad;
  return forward_edge ? a.stage + 1 : a.stage - 1;
}

// One past the last action of the run of transfers that starts at `first`.
inline std::size_t transfer_group_end(const std::vector<Action>& list, std::size_t first) {
  std::size_t end = first;
  while (end < list.size() && is_transfer(list[end].type)) ++end;
  return end;
}

}  // namespace plait
