#include "train/lr_schedule.hpp"

#include <cmath>
#include <numbers>

namespace plait {

double LrSchedule::at(int64_t step) const {
  const int64_t it = step - 1;  // nanoGPT counts iterations from 0
  if (it < warmup_steps) return lr * static_cast<double>(it + 1) / static_cast<double>(warmup_steps + 1);
  if (kind == "constant") return lr;
  const double min_lr = lr * min_lr_ratio;
  const int64_t decay_steps = total_steps - 1 - warmup_steps;  // the last step reaches min_lr
  if (decay_steps <= 0) return lr;
  const double ratio = static_cast<double>(it - warmup_steps) / static_cast<double>(decay_steps);
  const double coeff = 0.5 * (1.0 + std::cos(std::numbers::pi * ratio));
  return min_lr + coeff * (lr - min_lr);
}

}  // namespace plait
