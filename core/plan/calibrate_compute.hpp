#pragma once
// What one rank of this machine computes per second, measured as a rank computes (one
// intra-op thread, as plait runs each CPU rank of a multi-rank job): square matrix
// products by size in float32 and bfloat16 (the peak), a linear layer's products as a
// training step runs them (the efficiency by size), the fused attention, the tanh GELU,
// a large copy (the memory's bandwidth, which the memory-bound kernels and host transfers
// run at), and AdamW's step over float32 state. For `plait plan --calibrate`.
#include <cstdint>
#include <vector>

namespace plait {

struct ComputeFigures {
  std::vector<int64_t> gemm_sizes;
  std::vector<double> fp32_tflops;  // by size: square products, hot in the cache (the peak)
  std::vector<double> training_fp32_tflops;  // by size: a linear layer's three products as a step runs them
  double attention_tflops = 0;      // the fused attention's forward and backward, float32
  double gelu_gelems = 0;           // the tanh GELU's forward and backward
  double bf16_tflops = 0;           // the best of the sizes tried
  double copy_gbps = 0;             // bytes read and written per second
  double adam_gbps = 0;             // parameter, gradient and both moments' bytes per second
};

ComputeFigures measure_compute();

}  // namespace plait
