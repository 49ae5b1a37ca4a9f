#include "plan/rank_parameters.hpp"

#include <map>
#include <set>

namespace plait {

int64_t RankParameters::elements() const {
  int64_t n = 0;
  for (const CostParameter& p : params) n += p.elements;
  return n;
}

RankParameters rank_parameters(const StageModel& whole, const StagePartition& partition, int64_t pp, int64_t pp_rank) {
  const RankStages stages = rank_stages(whole, partition, pp, pp_rank);
  RankParameters out;
  std::map<const void*, std::size_t> index_of;
  std::set<std::string> names;
  for (const ParamRef& p : stages.model.all_parameters()) {
    if (p.tensor.requires_grad()) continue;
    out.frozen_elements += p.tensor.numel();
    if (p.tensor.scalar_type() == at::kBFloat16) out.frozen_bf16_elements += p.tensor.numel();
  }
  for (const ParamRef& p : stages.model.parameters()) {
    index_of[p.tensor.unsafeGetTensorImpl()] = out.params.size();
    names.insert(p.name);
    out.params.push_back({p.name, p.tensor.numel(), p.decay, p.split});
  }
  for (const UnitSlot& slot : stages.model.units) {
    CostUnit unit{slot.prefix, {}, {}};
    for (const auto& p : slot.unit->named_parameters(/*recurse=*/true)) {
      // Frozen parameters ([train] freeze) are not in the data plugin's list.
      if (auto it = index_of.find(p.value().unsafeGetTensorImpl()); it != index_of.end()) unit.params.push_back(it->second);
    }
    for (const std::string& name : slot.borrowed) {
      if (names.count(name) != 0) unit.borrowed.push_back(name);
    }
    out.units.push_back(std::move(unit));
  }
  return out;
}

}  // namespace plait
