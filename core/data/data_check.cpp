#include "data/data_check.hpp"

#include <chrono>
#include <cmath>

#include "data/make_sampler.hpp"
#include "data/token_scan.hpp"
#include "log/logging.hpp"
#include "plait/sdk/error.hpp"

namespace plait {

void check_data(const Options& data, const ModelSpec& model, const Options& model_table, int64_t dp, bool scan) {
  // What each rank will make: it opens the file, reads its header and checks its size.
  const std::unique_ptr<BatchSampler> sampler = make_sampler(data, model, /*seed=*/0, dp, /*dp_rank=*/0);
  const TokenFile* file = sampler->file();
  if (file == nullptr) return;  // synthetic
  if (const PackingReport& p = sampler->packing(); p.rows > 0) {
    const auto tenths = std::lround(1000.0 * static_cast<double>(p.filled) / static_cast<double>(p.positions));
    core_log().info("packing ", file->path(), ": ", p.documents, " documents into ", p.rows, " rows of ",
                    p.positions / p.rows, " positions, ", tenths / 10, ".", tenths % 10, "% filled; ", p.cut,
                    " longer than a row cut into pieces of seq_len + 1 tokens, ", p.left_out,
                    " of one token (no target) left out");
  }
  PLAIT_CHECK(file->tokenizer_vocab() <= model.vocab_size,
              concat(data.where("path"), ": [data] ", file->path(), " was made by a tokenizer of ", file->tokenizer_vocab(),
                     " tokens (", file->tokenizer(), "), more than the model's vocab_size ", model.vocab_size, " (",
                     model_place(model_table, "vocab_size"), ")"),
              concat("set [model] vocab_size = ", file->tokenizer_vocab(), " or more, or prepare the data with the "
                     "model's tokenizer"));
  PLAIT_CHECK(file->counted(0, file->size()) > 0,
              concat(data.where("path"), ": [data] ", file->path(), "'s loss mask counts none of its ", file->size(),
                     " tokens: no step would learn anything"),
              "prepare it again: a prompt/response file counts the responses");
  if (!scan || file->width() == 1) return;  // bytes are below 256 by construction
  const auto start = std::chrono::steady_clock::now();
  const int64_t largest = max_token(file->data(), file->width(), file->size());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double gb = static_cast<double>(file->size()) * file->width() / 1e9;
  core_log().debug("token scan: ", file->size(), " tokens (", gb, " GB) of ", file->path(), " in ", seconds, " s (",
                   gb / seconds, " GB/s); the largest is ", largest);
  if (largest < model.vocab_size) return;
  const int64_t position = first_token_at_least(file->data(), file->width(), file->size(), model.vocab_size);
  throw Error(concat(data.where("path"), ": [data] token ", file->at(position), " at position ", position, " of ",
                     file->path(), " is not below the model's vocab_size ", model.vocab_size, " (",
                     model_place(model_table, "vocab_size"), "); the file's largest token is ", largest),
              concat("set [model] vocab_size = ", largest + 1, " or more (the tokenizer's vocabulary), or use the data "
                     "the model was meant for"));
}

}  // namespace plait
