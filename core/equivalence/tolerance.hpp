#pragma once
// The equivalence principle's numbers, in one place for `plait check`, `plait compare`
// and the tests: how close a strategy's run must stay to the single process's, and how
// closeness is measured. (Torch-free: compare/ reads it too.)
#include <cmath>
#include <optional>
#include <string_view>

namespace plait {

// The default tolerance of a dtype: float64 1e-10, float32 1e-5. None for bfloat16, whose
// rounding depends on the order of every sum: its users give one (`plait check --tolerance`).
inline std::optional<double> default_tolerance(std::string_view dtype) {
  if (dtype == "float64") return 1e-10;
  if (dtype == "float32") return 1e-5;
  return std::nullopt;
}

// What `plait verify` holds a bfloat16 run to against the single process's bfloat16 run
// (autocast, fp32 master weights): a relative difference in losses and every gradient.
// Measured on llama tiny at dp 2: losses within 2e-5, gradients within 2.5e-3 (ddp) and
// 1.5e-2 (zero 3 and fsdp, whose bf16 working copies round once more); a gradient that
// misses a rank's share is off by tens of percent.
inline constexpr double kBfloat16VerifyTolerance = 5e-2;

// |value - reference| / |reference|, or the absolute difference where the reference is 0.
inline double relative_difference(double value, double reference) {
  const double diff = std::fabs(value - reference);
  return reference == 0.0 ? diff : diff / std::fabs(reference);
}

}  // namespace plait
