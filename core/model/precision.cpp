#include "model/precision.hpp"

#include <ATen/autocast_mode.h>

namespace plait {

Precision precision_from(const std::string& dtype) {
  if (dtype == "float64") return {at::kDouble, false};
  if (dtype == "bfloat16") return {at::kFloat, true};
  return {at::kFloat, false};
}

// The meta device has no autocast (AutocastScope leaves it off there).
AutocastState AutocastState::of(c10::DeviceType device) {
  if (device == c10::DeviceType::Meta) return {};
  return {at::autocast::is_autocast_enabled(device), at::autocast::get_autocast_dtype(device)};
}

void AutocastState::apply(c10::DeviceType device) const {
  if (device == c10::DeviceType::Meta) return;
  at::autocast::set_autocast_dtype(device, dtype);
  at::autocast::set_autocast_enabled(device, enabled);
}

AutocastScope::AutocastScope(const Precision& precision, c10::DeviceType device)
    // The meta device has no autocast; its shapes (the planner's measured rank) need none:
    // the measurement is state and traffic, which autocast does not change.
    : active_(precision.autocast_bf16 && device != c10::DeviceType::Meta), device_(device) {
  if (!active_) return;
  was_enabled_ = at::autocast::is_autocast_enabled(device_);
  was_dtype_ = at::autocast::get_autocast_dtype(device_);
  at::autocast::set_autocast_dtype(device_, at::kBFloat16);
  at::autocast::set_autocast_enabled(device_, true);
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  at::autocast::set_autocast_enabled(device_, was_enabled_);
  at::autocast::set_autocast_dtype(device_, was_dtype_);
  at::autocast::clear_cache();
}

}  // namespace plait
