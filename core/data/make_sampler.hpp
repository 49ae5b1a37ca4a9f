#pragma once
// The sampler a [data] table describes, checked against the model it feeds.
#include <memory>

#include "data/sampler.hpp"
#include "model/model_spec.hpp"
#include "plait/sdk/options.hpp"

namespace plait {

// T for this run: [data] seq_len, or the model's block_size when unset.
int64_t resolve_seq_len(const Options& data, const ModelSpec& model);

std::unique_ptr<BatchSampler> make_sampler(const Options& data, const ModelSpec& model, uint64_t seed,
                                           int64_t dp_size, int64_t dp_rank);

}  // namespace plait
