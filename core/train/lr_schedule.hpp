#pragma once
// Learning rate per optimizer step (steps count from 1); warmup as nanoGPT's get_lr:
//   warmup: lr * step / (warmup_steps + 1) for step <= warmup_steps
//   cosine: from lr at the end of warmup to min_lr_ratio * lr at the last step
//   constant: lr after warmup
#include <cstdint>
#include <string>

namespace plait {

struct LrSchedule {
  std::string kind = "cosine";  // "cosine" | "constant"
  double lr = 0.0;
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;
  double min_lr_ratio = 0.1;

  double at(int64_t step) const;
};

}  // namespace plait
