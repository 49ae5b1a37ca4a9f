#pragma once
// [gloo] p2p = "nccl": gloo's sends and receives with the strictest semantics NCCL may
// show, so that a CPU test proves what a GPU run needs. Under NCCL (ProcessGroupNCCL,
// batched as c10d's batch_isend_irecv is) tags are ignored: the k-th message one rank
// posts to another is the one the other's k-th receive from it gets; a rank's groups of
// point-to-point operations run one after another, in posting order; and a send
// completes only once its receive has started. Here every group waits for the one
// before it, a message is matched by its number in its direction (gloo's tag is that
// number), and a send completes only when the receiver posted its receive (as gloo's
// sends do). Each message carries a header with the sender's tag id and size, so a
// message that NCCL would deliver to the wrong receive fails with both tags named
// instead of corrupting a buffer; an order that deadlocks under NCCL times out,
// naming the operation that waited.
#include <chrono>
#include <memory>
#include <string>

#include "plait/sdk/communicator.hpp"

namespace plait::gloo_plugin {

// `gloo`: the group's plain gloo communicator. Collectives pass through unchanged.
std::shared_ptr<Communicator> with_nccl_p2p_order(std::shared_ptr<Communicator> gloo, std::string group_name,
                                                  std::chrono::milliseconds timeout);

}  // namespace plait::gloo_plugin
