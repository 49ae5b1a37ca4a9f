#pragma once
// Group planning: which parameters are flattened together, where each lies in its
// group's padded buffer, which part of that buffer each rank owns, and which group a
// unit must gather before it runs. Pure arithmetic on shapes (no tensors, no
// communicators), so a plan can be computed and checked for any world size.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "plait/sdk/model.hpp"
#include "plait/sharding/options.hpp"

namespace plait::sharding {

// A parameter as planning sees it.
struct ParamShape {
  std::string name;
  int64_t numel = 0;
  bool decay = false;
  TensorSplit split;
};

// A unit as planning sees it: the parameters it owns (indices into the parameter list)
// and the names of the parameters of other units it reads (a tied head's embedding).
struct UnitShape {
  std::string prefix;  // "transformer.h.3."; names the group
  std::vector<std::size_t> params;
  std::vector<std::string> borrowed;
};

// A run of a rank's shard that belongs to one parameter: AdamW decays it or not, and a
// checkpoint stores it as elements [first, first + length) of that parameter.
struct Segment {
  int64_t offset = 0;  // within the shard
  int64_t length = 0;
  bool decay = false;
  TensorSplit split;       // the parameter's tensor-parallel split (the global norm, partial gradients)
  std::size_t member = 0;  // which of the group's parameters
  int64_t first = 0;       // the run's first element within that parameter
};

struct PlannedGroup {
  std::string name;                   // for tags and logs: "h.3", "wte+head", "persistent"
  std::vector<std::size_t> params;    // indices into the parameter list
  std::vector<int64_t> offsets;       // each parameter's first element in the flat buffer
  int first_unit = 0, last_unit = 0;  // forward order of the units whose parameters these are
  int64_t numel = 0;                  // the parameters' elements
  int64_t padded = 0;                 // numel rounded up to a multiple of the shard count
  int64_t shard = 0;                  // padded / shard count: what each rank owns
  bool sharded_params = false;        // stage 3, not persistent: gathered only while in use
};

struct GroupPlan {
  std::vector<PlannedGroup> groups;       // in forward order of their first unit
  std::vector<std::size_t> group_of_param;
  std::vector<long> group_of_unit;        // the sharded group a unit gathers first; -1: none
};

// The plan for `shard_count` ranks. Units that read each other's parameters share a
// group; stage 3 keeps parameters under options.persistence_threshold elements in one
// whole "persistent" group; consecutive groups merge up to options.group_cap_mb of
// `element_bytes`-sized elements. Refuses a borrowed name that no unit owns.
GroupPlan plan_groups(const std::vector<UnitShape>& units, const std::vector<ParamShape>& params,
                      const ShardingOptions& options, int shard_count, int64_t element_bytes);

// The segments of shard `index` of `group` (padding belongs to no parameter).
std::vector<Segment> segments_of(const PlannedGroup& group, const std::vector<ParamShape>& params, int index);

// The shapes of a rank's real model: `params` as StageModel::parameters() lists them.
std::vector<ParamShape> param_shapes(const std::vector<ParamRef>& params);
std::vector<UnitShape> unit_shapes(const StageModel& model, const std::vector<ParamRef>& params);

}  // namespace plait::sharding
