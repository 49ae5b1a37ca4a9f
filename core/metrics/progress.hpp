#pragma once
// The one line a run prints per step.
#include <cstdint>
#include <string>

namespace plait {

struct StepReport {
  int64_t step = 0, total_steps = 0;
  double loss = 0, lr = 0, grad_norm = 0;
  double step_ms = 0, tokens_per_s = 0, mfu = 0;
  int64_t peak_mem_bytes = 0;
  double elapsed_s = 0;  // since the first step began
};

// "step  3/20 | loss 4.1234 | lr 6.00e-04 | norm 1.23 | 12.3k tok/s | 45.6 ms | mfu 0.12% | peak 12.3 MiB | eta 0:00:12"
std::string format_progress(const StepReport& r);

}  // namespace plait
