#pragma once
// train.dtype: float32 and float64 keep parameters and compute in that type; bfloat16
// keeps float32 master parameters and runs the forward under autocast in bf16, as
// PyTorch AMP does.
#include <string>

#include <ATen/ATen.h>

namespace plait {

struct Precision {
  at::ScalarType param_dtype = at::kFloat;
  bool autocast_bf16 = false;
};

Precision precision_from(const std::string& dtype);

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
