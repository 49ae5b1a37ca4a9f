#pragma once
// The data a run will read, checked before anything starts: the file exists and is a
// regular, non-empty file of the format [data] source names (plait's or llm.c's header
// read and held to the file's size, a loss mask of 0s and 1s, document starts rising),
// it has enough tokens for one global batch, its tokenizer's vocabulary and its largest
// token id fit the model's vocabulary (token_scan.hpp), and its loss mask counts something.
// Errors start at the config line to change.
#include <cstdint>

#include "model/model_spec.hpp"
#include "plait/sdk/options.hpp"

namespace plait {

// `model_table`: [model] as given (for the vocabulary's place); `dp`: the data-parallel
// degree (a global batch is dp x B sequences); `scan`: read every token (skipped when
// another process already did, for the same file).
void check_data(const Options& data, const ModelSpec& model, const Options& model_table, int64_t dp, bool scan);

}  // namespace plait
