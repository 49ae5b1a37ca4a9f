#pragma once
// The device a rank computes on, chosen once per process before anything touches CUDA:
// GPU <local rank>, or GPU 0 when the process sees a single GPU (srun --gpus-per-task=1,
// or CUDA_VISIBLE_DEVICES set per rank), made the current device, so that allocations
// that name no device (raw storage, NCCL's own buffers) land on the rank's GPU and not
// all on GPU 0. Deterministic cuBLAS needs its workspace setting before CUDA starts: it
// is set here, once, unless the user set it.
#include <ATen/core/Tensor.h>

namespace plait {

// CPU when `cuda` is false.
at::Device rank_device(bool cuda, int local_rank);

// Call before the first CUDA call of the process (communicators included).
void use_rank_device(const at::Device& device);

}  // namespace plait
