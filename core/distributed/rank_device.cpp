#include "distributed/rank_device.hpp"

#include <cstdlib>

#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

namespace plait {

at::Device rank_device(bool cuda, int local_rank) {
  if (!cuda) return at::Device(c10::kCPU);
  const int visible = at::detail::getCUDAHooks().getNumGPUs();
  return at::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(visible == 1 ? 0 : local_rank));
}

void use_rank_device(const at::Device& device) {
  if (!device.is_cuda()) return;
  // cuBLAS reads it when its first handle is made; ":4096:8" is what PyTorch's
  // reproducibility notes give for deterministic results.
  ::setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->setDevice(device);
}

}  // namespace plait
