#include "train/host_reads.hpp"

#include <ATen/ATen.h>

namespace plait {

at::Tensor CountingReader::read(const at::Tensor& values, const char* /*what*/) {
  ++count_;
  return values.to(at::kCPU).contiguous();
}

int64_t CountingReader::take() {
  const int64_t n = count_;
  count_ = 0;
  return n;
}

}  // namespace plait
