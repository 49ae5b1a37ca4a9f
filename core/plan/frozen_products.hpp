#pragma once
// Which of a rank's products have frozen weights, read from the shape model the planner
// builds as a rank does (through the adapter, with [train] freeze's marks).
#include "plait/sdk/model.hpp"
#include "plan/rank_shape.hpp"

namespace plait {

FrozenProducts frozen_products(const StageModel& whole, const std::string& family);

}  // namespace plait
