#pragma once
// How far a run has come, beyond its tensors: what a checkpoint records and a resume
// continues from. Samples count the global batch's rows, so they do not depend on how
// the global batch is split over data-parallel ranks and microbatches.
#include <cstdint>

#include <nlohmann/json.hpp>

namespace plait {

struct TrainingProgress {
  int64_t step = 0;     // steps done
  int64_t updates = 0;  // optimizer updates applied (AdamW's step count; a withheld step does not count)
  int64_t skipped = 0;  // steps withheld for a non-finite loss or norm
  int64_t samples = 0;  // global samples consumed
  int64_t tokens = 0;   // target tokens trained on
};

inline nlohmann::ordered_json to_json(const TrainingProgress& p) {
  return {{"step", p.step}, {"updates", p.updates}, {"skipped", p.skipped}, {"samples", p.samples}, {"tokens", p.tokens}};
}

}  // namespace plait
