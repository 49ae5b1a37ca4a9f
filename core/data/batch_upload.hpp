#pragma once
// A step's microbatches on the rank's device, uploaded once before the step's compute.
// On a GPU each tensor goes through pinned memory with a non-blocking copy on the current
// stream: the kernels that read it are ordered after it, and the host goes on to launch
// them instead of waiting out a staged copy per tensor and microbatch. The host's Batch
// stays as it was (its counts are read there).
#include <vector>

#include <c10/core/Device.h>

#include "data/sampler.hpp"

namespace plait {

std::vector<Batch> batches_on(const std::vector<Batch>& batches, const c10::Device& device);

}  // namespace plait
