#pragma once
// Cuts tokens into batches. Global batch k is dp * B sequences; data-parallel rank r
// takes rows r*B .. r*B+B-1 of it, so any data-parallel degree sees the same global
// batches as one process with B' = dp * B (the equivalence principle needs this).
//
//   sequential (llm.c's loader): global batch k reads dp*B*T+1 consecutive tokens from
//     position k*dp*B*T, inputs the first dp*B*T, targets the last dp*B*T, wrapping at
//     the end of the file; rank r's share starts at (k*dp + r)*B*T.
//   random: sample s (row j of global batch k is s = k*dp*B + j) is the window of T+1
//     tokens at an offset drawn from (seed, s).
//   synthetic: sample s is generated from (seed, s).
//   packing: sample s is packed row s (sequential, cycling) or a row drawn from (seed, s).
// Every order makes sample s a function of s alone, so a run whose global batch is split
// another way (dp x B x grad_accum kept) trains on the same samples in each step.
//
// Targets that do not count are -1: in a file with a loss mask (token_file_format.hpp),
// those whose mask byte is 0; with mask_prompts (synthetic data), sample s's first P
// targets, a prompt's, P drawn from (seed, s): the whole row for a quarter of the
// samples, otherwise 0 to T-1.
#include <cstdint>
#include <memory>
#include <string>

#include <ATen/core/Tensor.h>

#include "data/packing.hpp"
#include "data/token_source.hpp"

namespace plait {

struct SamplerSpec {
  std::string order = "random";  // "random" | "sequential"
  int64_t rows = 1;              // B: sequences per microbatch on this rank
  int64_t seq_len = 1;           // T
  int64_t dp_size = 1;
  int64_t dp_rank = 0;
  uint64_t seed = 0;
  int64_t vocab_size = 0;        // tokens must be below it
  bool mask_prompts = false;     // synthetic data: each sample's prompt does not count
  bool packing = false;          // a token file's documents packed into rows (packing.hpp)
};

struct Batch {
  at::Tensor inputs;   // [B, T] int64
  at::Tensor targets;  // [B, T] int64
  int64_t index = 0;   // global batch k
  // The run's id of row 0: row j of global batch k is sample k * dp * B + j, so every
  // data-parallel degree numbers the samples as the single process does.
  int64_t first_sample = 0;
  // Targets that count in the loss (not -1) in global batch k, over every data-parallel
  // rank's rows: the host knows it without a collective, since each rank can read (or
  // make) the others' rows.
  int64_t counted = 0;
  // Packed rows only (undefined otherwise), [B, T] int64: which of the row's documents each
  // position holds (padding after the last is a document of its own) and its position
  // within that document.
  at::Tensor documents;
  at::Tensor positions;
  // On a GPU, packed rows as the variable-length attention kernel reads them
  // (data/document_runs.hpp), made by batches_on; undefined and 0 elsewhere.
  at::Tensor document_starts;
  int64_t longest_document = 0;
};

class BatchSampler {
 public:
  // Exactly one of `file` and `synthetic` is set.
  BatchSampler(const SamplerSpec& spec, std::shared_ptr<const TokenFile> file,
               std::shared_ptr<const SyntheticLanguage> synthetic);

  Batch next();
  int64_t position() const { return position_; }
  const TokenFile* file() const { return file_.get(); }  // null for synthetic data
  const PackingReport& packing() const { return packing_; }  // rows == 0 when not packing

  // Global samples drawn so far (position x dp x B): the same for any split of the batch.
  int64_t samples() const;
  int64_t samples_per_batch() const { return spec_.dp_size * spec_.rows; }
  // {"order":..,"seed":..,"samples":n}; restore() refuses a state of another order or
  // seed, and goes on from global sample n whatever dp and B are now.
  std::string state() const;
  void restore(const std::string& state);

 private:
  int64_t token(int64_t position) const;
  int64_t prompt_length(int64_t sample) const;
  int64_t counted_in_batch(int64_t k) const;
  int64_t window_start(int64_t sample) const;  // random order: sample's first token in the file
  int64_t counted_around(int64_t begin, int64_t length) const;
  const PackedRow& packed_row(int64_t sample) const;
  Batch packed_batch(int64_t k, int64_t first);

  SamplerSpec spec_;
  std::shared_ptr<const TokenFile> file_;
  std::shared_ptr<const SyntheticLanguage> synthetic_;
  int64_t position_ = 0;
  std::vector<PackedRow> packed_;
  PackingReport packing_;
};

}  // namespace plait
