#include "plan/rank_shape.hpp"

#include "plait/sdk/error.hpp"

namespace plait {

namespace {
double share_of(const std::map<std::string, double>& shares, const std::string& product) {
  const auto it = shares.find(product);
  return it == shares.end() ? 0.0 : it->second;
}
}  // namespace

double FrozenProducts::frozen_share(const std::string& product) const { return share_of(frozen, product); }
double FrozenProducts::unread_share(const std::string& product) const { return share_of(unread, product); }

void check_checkpointing(const std::string& mode) {
  PLAIT_CHECK(mode == "none" || mode == "full" || mode == "selective",
              concat("activation checkpointing '", mode, "' is not one of none, full, selective"), "");
}

}  // namespace plait
