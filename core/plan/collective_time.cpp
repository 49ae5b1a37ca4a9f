#include "plan/collective_time.hpp"

#include <algorithm>

#include "plait/sdk/error.hpp"

namespace plait {
namespace {

bool within_node(const GroupPlacement& g) { return g.per_node >= g.size; }

// The share of the full buffer that crosses each rank's busiest link.
double moved_share(Collective op, int64_t n) {
  const double ranks = static_cast<double>(n);
  switch (op) {
    case Collective::all_reduce: return 2.0 * (ranks - 1) / ranks;
    case Collective::all_gather:
    case Collective::reduce_scatter: return (ranks - 1) / ranks;
    case Collective::send: return 1.0;
  }
  return 1.0;
}

// The measured times at sizes around `moved` bytes, interpolated; past the last, its
// time plus the rest at `gbps`.
double measured_seconds(const CollectiveCost& link, double moved, double gbps) {
  const std::vector<double>& kib = link.bus_kib;
  const std::vector<double>& us = link.times_us;
  const double k = moved / 1024.0;
  if (k <= kib.front()) return us.front() * 1e-6;
  for (std::size_t i = 1; i < kib.size(); ++i) {
    if (k <= kib[i]) return (us[i - 1] + (us[i] - us[i - 1]) * (k - kib[i - 1]) / (kib[i] - kib[i - 1])) * 1e-6;
  }
  return us.back() * 1e-6 + (k - kib.back()) * 1024.0 / (gbps * 1e9);
}

}  // namespace

double group_bus_gbps(const Hardware& hw, Collective op, const GroupPlacement& group) {
  const double intra = hw.intra_node.of(op).bus_gbps;
  if (within_node(group)) return intra;
  // A send crosses one NIC whatever the group.
  const double rings = op == Collective::send ? 1.0 : static_cast<double>(group.per_node);
  return std::min(intra, rings * hw.inter_node.of(op).bus_gbps);
}

double collective_seconds(const Hardware& hw, Collective op, double bytes, const GroupPlacement& group) {
  PLAIT_CHECK(group.size >= 1 && group.per_node >= 1 && group.per_node <= group.size,
              concat("internal: a group of ", group.size, " with ", group.per_node, " per node"),
              "report this as a plait bug");
  if (group.size == 1 || bytes <= 0) return 0.0;
  const CollectiveCost& link = within_node(group) ? hw.intra_node.of(op) : hw.inter_node.of(op);
  const double moved = bytes * moved_share(op, group.size), gbps = group_bus_gbps(hw, op, group);
  if (!link.bus_kib.empty()) return measured_seconds(link, moved, gbps);
  return link.latency_us * 1e-6 + moved / (gbps * 1e9);
}

}  // namespace plait
