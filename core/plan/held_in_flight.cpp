#include "plan/held_in_flight.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "plait/sdk/error.hpp"

namespace plait {

int64_t peak_held_bytes(const std::vector<Action>& rank_actions, const std::vector<int64_t>& stage_bytes) {
  std::map<std::pair<int64_t, int64_t>, int64_t> held;  // (stage, microbatch) -> bytes
  int64_t now = 0, peak = 0;
  for (const Action& a : rank_actions) {
    if (a.type != ActionType::forward && a.type != ActionType::backward) continue;
    PLAIT_CHECK(a.stage >= 0 && a.stage < static_cast<int64_t>(stage_bytes.size()),
                concat("the schedule runs stage ", a.stage, " of ", stage_bytes.size()), "");
    const std::pair<int64_t, int64_t> key{a.stage, a.microbatch};
    if (a.type == ActionType::forward) {
      held[key] = stage_bytes[static_cast<std::size_t>(a.stage)];
      now += held[key];
      peak = std::max(peak, now);
    } else if (auto it = held.find(key); it != held.end()) {
      now -= it->second;
      held.erase(it);
    }
  }
  return peak;
}

std::vector<int64_t> stage_activation_bytes(const PipelinePlan& pipeline, const ActivationBytes& per) {
  std::vector<int64_t> bytes;
  for (const auto& units : pipeline.partition.units_of) {
    int64_t sum = units.empty() ? 0 : per.per_stage;
    for (std::size_t u : units) {
      const UnitKind kind = pipeline.shapes.units[u].kind;
      sum += kind == UnitKind::embedding ? per.embedding : kind == UnitKind::head ? per.head : per.per_block;
    }
    bytes.push_back(sum);
  }
  return bytes;
}

}  // namespace plait
