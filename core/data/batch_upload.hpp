#pragma once
// A step's microbatches on the rank's device, uploaded once before the step's compute.
// On a GPU each tensor goes through pinned memory with a non-blocking copy on the current
// stream: the kernels that read it are ordered after it, and the host goes on to launch
// them instead of waiting out a staged copy per tensor and microbatch. The host's Batch
// stays as it was (its counts are read there). Only what the rank's stages read goes up:
// the inputs where it runs the first stage, the targets where it runs the last; documents
// and positions wherever they are defined (every stage's attention reads them).
#include <vector>

#include <c10/core/Device.h>

#include "data/sampler.hpp"

namespace plait {

struct StageReads {
  bool inputs = true;   // the rank runs the pipeline's first stage
  bool targets = true;  // the rank runs its last
};

std::vector<Batch> batches_on(const std::vector<Batch>& batches, const c10::Device& device, StageReads reads = {});

}  // namespace plait
