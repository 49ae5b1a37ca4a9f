#pragma once
// Which of a rank's products have frozen weights, read from the shape model the planner
// builds as a rank does (through the adapter, with [train] freeze's marks).
#include "plait/sdk/model.hpp"
#include "plan/rank_shape.hpp"
#include "run/tensor_shapes_check.hpp"

namespace plait {

// `adapters`: each adapter site's cost (null: none); an adapter that keeps its own copy
// of the input (a dropped one) leaves its frozen linear's input unread.
FrozenProducts frozen_products(const StageModel& whole, const std::string& family,
                               const std::vector<AdapterSiteCost>* adapters = nullptr);

}  // namespace plait
