#include "plan/calibrate_compute.hpp"

#include <algorithm>
#include <chrono>
#include <functional>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

namespace plait {
namespace {

// The median of five timings of `f`, each repeating it until 50 ms have passed.
double seconds_per_call(const std::function<void()>& f) {
  f();  // warm up: first-touch pages, kernels' plans
  std::vector<double> runs;
  for (int r = 0; r < 5; ++r) {
    int64_t calls = 0;
    const auto start = std::chrono::steady_clock::now();
    double elapsed = 0;
    do {
      f();
      ++calls;
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } while (elapsed < 0.05);
    runs.push_back(elapsed / static_cast<double>(calls));
  }
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

double gemm_tflops(int64_t n, at::ScalarType dtype) {
  const at::Tensor a = at::randn({n, n}).to(dtype), b = at::randn({n, n}).to(dtype);
  at::Tensor c = at::empty({n, n}, a.options());
  const double s = seconds_per_call([&] { at::mm_out(c, a, b); });
  return 2.0 * static_cast<double>(n * n * n) / s / 1e12;
}

double copy_gbps() {
  constexpr int64_t kElements = 32 << 20;  // 128 MiB of float32: far past the caches
  const at::Tensor from = at::randn({kElements});
  at::Tensor to = at::empty_like(from);
  const double s = seconds_per_call([&] { to.copy_(from); });
  return 2.0 * 4.0 * static_cast<double>(kElements) / s / 1e9;
}

// The step ReplicatedAdamW takes, in place: decay, both moments, the update.
double adam_gbps() {
  constexpr int64_t kElements = 8 << 20;
  at::Tensor p = at::randn({kElements}), g = at::randn({kElements}), m = at::zeros({kElements}),
             v = at::zeros({kElements});
  const double s = seconds_per_call([&] {
    p.mul_(1.0 - 1e-4 * 0.1);
    m.lerp_(g, 0.1);
    v.mul_(0.95).addcmul_(g, g, 0.05);
    p.addcdiv_(m, v.sqrt().add_(1e-8), -1e-4);
  });
  return 16.0 * static_cast<double>(kElements) / s / 1e9;
}

}  // namespace

ComputeFigures measure_compute() {
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  ComputeFigures f;
  f.gemm_sizes = {64, 128, 256, 512, 1024};
  for (int64_t n : f.gemm_sizes) f.fp32_tflops.push_back(gemm_tflops(n, at::kFloat));
  for (int64_t n : {256, 512, 1024}) f.bf16_tflops = std::max(f.bf16_tflops, gemm_tflops(n, at::kBFloat16));
  f.copy_gbps = copy_gbps();
  f.adam_gbps = adam_gbps();
  at::set_num_threads(threads);
  return f;
}

}  // namespace plait
