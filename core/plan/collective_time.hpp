#pragma once
// How long a collective takes on a machine: the hardware file's alpha-beta figures,
// t = latency + bytes * (share each rank moves) / bus bandwidth, with the share as
// nccl-tests defines bus bandwidth (all-reduce 2(n-1)/n, all-gather and reduce-scatter
// (n-1)/n of the full buffer, a send all of it). Where the file gives a collective's
// times at some sizes (a calibrated machine), those are interpolated instead.
//
// A group within one node takes the intra-node links. A group across nodes with k members
// on each runs k rings at once, each through its own member's NIC: its bus bandwidth is k
// times the per-accelerator inter-node figure, and never more than the node's own links
// carry (a data-parallel group of 8 per node on A100s: min(8 * 23, 230) = 184 GB/s; with
// tensor parallel 8 taking the node, k = 1: 23 GB/s).
#include <cstdint>

#include "plan/hardware.hpp"

namespace plait {

struct GroupPlacement {
  int64_t size = 1;      // ranks in the group
  int64_t per_node = 1;  // of them on each node (size when the group is within one node)
};

// Seconds for one collective of `bytes` (the full buffer: an all-reduce's tensor, an
// all-gather's output, a reduce-scatter's input; a send's message) over `group`.
double collective_seconds(const Hardware& hw, Collective op, double bytes, const GroupPlacement& group);

// The bus bandwidth the group gets, GB/s.
double group_bus_gbps(const Hardware& hw, Collective op, const GroupPlacement& group);

}  // namespace plait
