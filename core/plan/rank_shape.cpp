#include "plan/rank_shape.hpp"

#include "plait/sdk/error.hpp"

namespace plait {

void check_checkpointing(const std::string& mode) {
  PLAIT_CHECK(mode == "none" || mode == "full" || mode == "selective",
              concat("activation checkpointing '", mode, "' is not one of none, full, selective"), "");
}

}  // namespace plait
