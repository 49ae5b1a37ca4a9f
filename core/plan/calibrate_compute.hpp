#pragma once
// What one rank of this machine computes per second, measured as a rank computes (one
// intra-op thread, as plait runs each CPU rank of a multi-rank job): square matrix
// products by size in float32 and bfloat16, a large copy (the memory's bandwidth, which
// the memory-bound kernels and host transfers run at), and AdamW's step over float32
// state. For `plait plan --calibrate`.
#include <cstdint>
#include <vector>

namespace plait {

struct ComputeFigures {
  std::vector<int64_t> gemm_sizes;
  std::vector<double> fp32_tflops;  // by size
  double bf16_tflops = 0;           // the best of the sizes tried
  double copy_gbps = 0;             // bytes read and written per second
  double adam_gbps = 0;             // parameter, gradient and both moments' bytes per second
};

ComputeFigures measure_compute();

}  // namespace plait
