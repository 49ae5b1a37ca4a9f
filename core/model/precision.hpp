#pragma once
// train.dtype: float32 and float64 keep parameters and compute in that type; bfloat16
// keeps float32 master parameters and runs the forward under autocast in bf16, as
// PyTorch AMP does.
#include <string>

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>

namespace plait {

struct Precision {
  at::ScalarType param_dtype = at::kFloat;
  bool autocast_bf16 = false;
};

Precision precision_from(const std::string& dtype);

// The bytes of an activation element: bf16 under autocast, else the parameters' type's.
inline int64_t activation_element_bytes(const Precision& p) {
  return p.autocast_bf16 ? 2 : static_cast<int64_t>(c10::elementSize(p.param_dtype));
}

// The autocast state of a device, captured where a forward ran, so that a recomputation
// in backward (activation checkpointing) runs under the same.
struct AutocastState {
  bool enabled = false;
  at::ScalarType dtype = at::kBFloat16;
  static AutocastState of(c10::DeviceType device);
  void apply(c10::DeviceType device) const;
};

// Runs `fn` under `state`, then restores the device's own (and drops autocast's cache).
template <class Fn>
auto under_autocast(const AutocastState& state, c10::DeviceType device, Fn&& fn) {
  const AutocastState outer = AutocastState::of(device);
  state.apply(device);
  auto result = fn();
  outer.apply(device);
  if (state.enabled) at::autocast::clear_cache();
  return result;
}

// Autocast for the forward pass only; restores the previous state on exit.
class AutocastScope {
 public:
  AutocastScope(const Precision& precision, c10::DeviceType device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false;
  c10::DeviceType device_;
  bool was_enabled_ = false;
  at::ScalarType was_dtype_ = at::kBFloat16;
};

}  // namespace plait
