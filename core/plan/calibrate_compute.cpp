#include "plan/calibrate_compute.hpp"

#include <algorithm>
#include <chrono>
#include <functional>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "compare/comparison.hpp"

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
  return compare::spread_of(runs).median;
}

double gemm_tflops(int64_t n, at::ScalarType dtype) {
  const at::Tensor a = at::randn({n, n}).to(dtype), b = at::randn({n, n}).to(dtype);
  at::Tensor c = at::empty({n, n}, a.options());
  const double s = seconds_per_call([&] { at::mm_out(c, a, b); });
  return 2.0 * static_cast<double>(n * n * n) / s / 1e12;
}

// A linear layer's three products as a training step runs them, over 1,024 tokens with
// `size` features in and 3 x `size` out (the smallest dimension `size`): the forward
// (addmm, the weight transposed), the input's gradient and the weight's (a transposed
// operand), each into a fresh output as autograd allocates it, the operands taken in turn
// from copies that together outgrow the core's cache, as a step leaves them. TFLOP/s.
double training_gemm_tflops(int64_t size) {
  const int64_t tokens = 1024, in = size, out = 3 * size;
  const int64_t copies = std::max<int64_t>(2, (16 << 20) / (4 * (tokens * (in + out) + in * out)));
  std::vector<at::Tensor> x, w, dy;
  for (int64_t c = 0; c < copies; ++c) {
    x.push_back(at::randn({tokens, in}));
    w.push_back(at::randn({out, in}));
    dy.push_back(at::randn({tokens, out}));
  }
  const at::Tensor bias = at::randn({out});
  int64_t next = 0;
  const double s = seconds_per_call([&] {
    const auto c = static_cast<std::size_t>(next++ % copies);
    at::Tensor y = at::addmm(bias, x[c], w[c].t());
    at::Tensor dx = at::mm(dy[c], w[c]);
    at::Tensor dw = at::mm(dy[c].t(), x[c]);
  });
  return 3 * 2.0 * static_cast<double>(tokens * in * out) / s / 1e12;
}

// scaled_dot_product_attention's forward and backward, causal, 8 x 4 heads of 64 over
// 256 positions; FLOPs counted whole (4 x seq^2 x head size per head each way, twice
// that backward), as the planner counts them. TFLOP/s.
double attention_tflops() {
  constexpr int64_t kBatch = 8, kHeads = 4, kSeq = 256, kDim = 64;
  std::vector<at::Tensor> qkv;
  for (int i = 0; i < 3; ++i) qkv.push_back(at::randn({kBatch, kHeads, kSeq, kDim}).requires_grad_());
  const at::Tensor dout = at::randn({kBatch, kHeads, kSeq, kDim});
  const double s = seconds_per_call([&] {
    at::Tensor y = at::scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], {}, 0.0, /*is_causal=*/true);
    y.backward(dout);
    for (at::Tensor& t : qkv) t.mutable_grad() = at::Tensor();  // a step's gradients are fresh
  });
  return 3 * 4.0 * static_cast<double>(kBatch * kHeads * kSeq * kSeq * kDim) / s / 1e12;
}

// The tanh GELU's forward and backward: billions of elements a second.
double gelu_gelems() {
  constexpr int64_t kElements = 1 << 20;
  const at::Tensor x = at::randn({kElements}), dy = at::randn({kElements});
  const double s = seconds_per_call([&] {
    at::Tensor y = at::gelu(x, "tanh");
    at::Tensor dx = at::gelu_backward(dy, x, "tanh");
  });
  return static_cast<double>(kElements) / s / 1e9;
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
  for (int64_t n : f.gemm_sizes) {
    f.fp32_tflops.push_back(gemm_tflops(n, at::kFloat));
    f.training_fp32_tflops.push_back(training_gemm_tflops(n));
  }
  f.attention_tflops = attention_tflops();
  f.gelu_gelems = gelu_gelems();
  for (int64_t n : {256, 512, 1024}) f.bf16_tflops = std::max(f.bf16_tflops, gemm_tflops(n, at::kBFloat16));
  f.copy_gbps = copy_gbps();
  f.adam_gbps = adam_gbps();
  at::set_num_threads(threads);
  return f;
}

}  // namespace plait
