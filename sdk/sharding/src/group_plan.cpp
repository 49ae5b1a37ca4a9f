#include "plait/sharding/group_plan.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <numeric>

#include "plait/sdk/error.hpp"

namespace plait::sharding {
namespace {

int64_t round_up(int64_t n, int64_t multiple) { return (n + multiple - 1) / multiple * multiple; }

// Union-find over units: units that read each other's parameters share one group.
std::size_t find_root(std::vector<std::size_t>& parent, std::size_t x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

std::map<std::string, std::size_t> index_by_name(const std::vector<ParamShape>& params) {
  std::map<std::string, std::size_t> out;
  for (std::size_t i = 0; i < params.size(); ++i) out[params[i].name] = i;
  return out;
}

// The unit that owns each parameter.
std::vector<int> unit_of_param(const std::vector<UnitShape>& units, std::size_t param_count) {
  std::vector<int> out(param_count, -1);
  for (std::size_t u = 0; u < units.size(); ++u) {
    for (std::size_t i : units[u].params) out.at(i) = static_cast<int>(u);
  }
  return out;
}

// The sets of units that must be gathered together, in order of their first unit.
std::vector<std::vector<std::size_t>> units_sharing_parameters(const std::vector<UnitShape>& units,
                                                               const std::map<std::string, std::size_t>& by_name,
                                                               const std::vector<int>& owner_of,
                                                               const std::string& plugin) {
  std::vector<std::size_t> parent(units.size());
  std::iota(parent.begin(), parent.end(), 0);
  for (std::size_t u = 0; u < units.size(); ++u) {
    for (const auto& name : units[u].borrowed) {
      auto it = by_name.find(name);
      PLAIT_CHECK(it != by_name.end() && owner_of[it->second] >= 0,
                  concat(plugin, ": unit ", units[u].prefix, " borrows '", name, "', which no unit owns"),
                  "the model builder's `borrowed` list must name parameters of other units");
      parent[find_root(parent, u)] = find_root(parent, static_cast<std::size_t>(owner_of[it->second]));
    }
  }
  std::map<std::size_t, std::vector<std::size_t>> by_root;
  for (std::size_t u = 0; u < units.size(); ++u) by_root[find_root(parent, u)].push_back(u);
  std::vector<std::vector<std::size_t>> sets;
  for (auto& [root, members] : by_root) sets.push_back(members);
  std::sort(sets.begin(), sets.end(), [](const auto& a, const auto& b) { return a.front() < b.front(); });
  return sets;
}

std::string unit_label(const UnitShape& unit, std::size_t index) {
  const std::string& p = unit.prefix;
  return p.empty() ? concat("unit", index) : p.substr(0, p.back() == '.' ? p.size() - 1 : p.size());
}

// One group per unit set; under stage 3 small parameters go to one persistent group;
// consecutive sets are merged up to the cap.
std::vector<PlannedGroup> draft_groups(const std::vector<UnitShape>& units,
                                       const std::vector<std::vector<std::size_t>>& sets,
                                       const std::vector<ParamShape>& params, const ShardingOptions& options,
                                       int64_t element_bytes) {
  std::vector<PlannedGroup> drafts;
  PlannedGroup persistent;
  persistent.name = "persistent";
  persistent.last_unit = static_cast<int>(units.size()) - 1;
  auto bytes = [&](const PlannedGroup& g) {
    int64_t n = 0;
    for (std::size_t i : g.params) n += params[i].numel * element_bytes;
    return n;
  };
  const auto cap = static_cast<int64_t>(options.group_cap_mb * 1024 * 1024);
  for (const auto& set : sets) {
    PlannedGroup d;
    d.first_unit = static_cast<int>(set.front());
    d.last_unit = static_cast<int>(set.back());
    for (std::size_t u : set) {
      d.name += (d.name.empty() ? "" : "+") + unit_label(units[u], u);
      for (std::size_t i : units[u].params) {
        const bool small = options.stage == 3 && params[i].numel < options.persistence_threshold;
        (small ? persistent : d).params.push_back(i);
      }
    }
    if (d.params.empty()) continue;
    if (!drafts.empty() && cap > 0 && bytes(drafts.back()) + bytes(d) <= cap) {
      PlannedGroup& prev = drafts.back();
      prev.params.insert(prev.params.end(), d.params.begin(), d.params.end());
      prev.first_unit = std::min(prev.first_unit, d.first_unit);
      prev.last_unit = std::max(prev.last_unit, d.last_unit);
      prev.name += "+" + d.name;
    } else {
      drafts.push_back(std::move(d));
    }
  }
  for (auto& d : drafts) d.sharded_params = options.stage == 3;
  if (!persistent.params.empty()) drafts.push_back(std::move(persistent));
  return drafts;
}

}  // namespace

GroupPlan plan_groups(const std::vector<UnitShape>& units, const std::vector<ParamShape>& params,
                      const ShardingOptions& options, int shard_count, int64_t element_bytes) {
  PLAIT_CHECK(shard_count >= 1, concat(options.plugin, ": cannot shard over ", shard_count, " ranks"), "");
  const auto by_name = index_by_name(params);
  const auto owner_of = unit_of_param(units, params.size());
  GroupPlan plan;
  plan.groups = draft_groups(units, units_sharing_parameters(units, by_name, owner_of, options.plugin), params, options,
                             element_bytes);
  plan.group_of_param.assign(params.size(), 0);
  for (std::size_t k = 0; k < plan.groups.size(); ++k) {
    PlannedGroup& g = plan.groups[k];
    for (std::size_t i : g.params) {
      g.offsets.push_back(g.numel);
      g.numel += params[i].numel;
      plan.group_of_param[i] = k;
    }
    g.padded = round_up(g.numel, shard_count);
    g.shard = g.padded / shard_count;
  }
  // A unit gathers the sharded group of its own parameters, or of those it borrows.
  plan.group_of_unit.assign(units.size(), -1);
  for (std::size_t u = 0; u < units.size(); ++u) {
    for (std::size_t i : units[u].params) {
      if (plan.groups[plan.group_of_param[i]].sharded_params) plan.group_of_unit[u] = static_cast<long>(plan.group_of_param[i]);
    }
    for (const auto& name : units[u].borrowed) {
      const std::size_t owner = plan.group_of_param[by_name.at(name)];
      if (plan.group_of_unit[u] < 0 && plan.groups[owner].sharded_params) plan.group_of_unit[u] = static_cast<long>(owner);
    }
  }
  return plan;
}

std::vector<Segment> segments_of(const PlannedGroup& group, const std::vector<ParamShape>& params, int index) {
  std::vector<Segment> out;
  const int64_t begin = static_cast<int64_t>(index) * group.shard, end = begin + group.shard;
  for (std::size_t k = 0; k < group.params.size(); ++k) {
    const ParamShape& p = params[group.params[k]];
    const int64_t a = std::max(begin, group.offsets[k]), b = std::min(end, group.offsets[k] + p.numel);
    if (a < b) out.push_back({a - begin, b - a, p.decay, p.split, k, a - group.offsets[k]});
  }
  return out;
}

std::vector<ParamShape> param_shapes(const std::vector<ParamRef>& params) {
  std::vector<ParamShape> out;
  out.reserve(params.size());
  for (const auto& p : params) out.push_back({p.name, p.tensor.numel(), p.decay, p.split});
  return out;
}

std::vector<UnitShape> unit_shapes(const StageModel& model, const std::vector<ParamRef>& params) {
  std::map<const void*, std::size_t> index_of;
  for (std::size_t i = 0; i < params.size(); ++i) index_of[params[i].tensor.unsafeGetTensorImpl()] = i;
  // Frozen parameters ([train] freeze) are not among `params`: the unit that owns one
  // keeps it whole, so a unit that borrows it has nothing to gather.
  std::set<std::string> frozen;
  for (const ParamRef& p : model.all_parameters()) {
    if (!p.tensor.requires_grad()) frozen.insert(p.name);
  }
  std::vector<UnitShape> out;
  for (const auto& slot : model.units) {
    UnitShape u{slot.prefix, {}, {}};
    for (const std::string& name : slot.borrowed) {
      if (frozen.count(name) == 0) u.borrowed.push_back(name);
    }
    for (const auto& p : slot.unit->named_parameters(/*recurse=*/true)) {
      if (auto it = index_of.find(p.value().unsafeGetTensorImpl()); it != index_of.end()) u.params.push_back(it->second);
    }
    out.push_back(std::move(u));
  }
  return out;
}

}  // namespace plait::sharding
