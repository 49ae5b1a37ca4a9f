#pragma once
// Plays every pipeline rank's list under the strictest point-to-point semantics NCCL
// may show, with the groups the executor posts (transfer_groups.hpp): the k-th message
// a rank sends to another is the other's k-th receive from it, whatever its tag; a
// rank's groups run one after another in posting order; an operation completes only
// once its peer's matching one has started; a compute waits for the receive it reads.
// The tie of gpt2's embedding (first stage owns it, last stage sends its gradient over
// a group of its own before the owner's last backward) is played for every model, so a
// schedule accepted here serves both families. A schedule that would mismatch or
// deadlock under NCCL is refused before launch, naming the pair of ranks and messages.
#include <string>
#include <vector>

#include "plait/sdk/pipeline.hpp"

namespace plait {

// Throws plait::Error naming the ranks and the messages, after `where` (the schedule).
void check_p2p_order(const std::vector<std::vector<Action>>& ranks, const ScheduleSpec& spec,
                     const std::string& where);

}  // namespace plait
