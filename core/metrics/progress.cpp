#include "metrics/progress.hpp"

#include <cstdio>

namespace plait {

static std::string human_count(double x) {
  char buf[32];
  if (x >= 1e6) std::snprintf(buf, sizeof(buf), "%.2fM", x / 1e6);
  else if (x >= 1e3) std::snprintf(buf, sizeof(buf), "%.1fk", x / 1e3);
  else std::snprintf(buf, sizeof(buf), "%.0f", x);
  return buf;
}

static std::string human_bytes(double b) {
  char buf[32];
  if (b >= 1024.0 * 1024 * 1024) std::snprintf(buf, sizeof(buf), "%.2f GiB", b / (1024.0 * 1024 * 1024));
  else std::snprintf(buf, sizeof(buf), "%.1f MiB", b / (1024.0 * 1024));
  return buf;
}

std::string format_progress(const StepReport& r) {
  const double per_step = r.step > 0 ? r.elapsed_s / static_cast<double>(r.step) : 0.0;
  const auto eta = static_cast<int64_t>(per_step * static_cast<double>(r.total_steps - r.step) + 0.5);
  const int width = static_cast<int>(std::to_string(r.total_steps).size());
  char buf[320];
  std::snprintf(buf, sizeof(buf),
                "step %*lld/%lld | loss %.4f | lr %.2e | norm %.3f | %s tok/s | %.1f ms | mfu %.2f%% | peak %s | eta "
                "%lld:%02lld:%02lld",
                width, static_cast<long long>(r.step), static_cast<long long>(r.total_steps), r.loss, r.lr,
                r.grad_norm, human_count(r.tokens_per_s).c_str(), r.step_ms, 100.0 * r.mfu,
                human_bytes(static_cast<double>(r.peak_mem_bytes)).c_str(), static_cast<long long>(eta / 3600),
                static_cast<long long>(eta / 60 % 60), static_cast<long long>(eta % 60));
  return buf;
}

}  // namespace plait
