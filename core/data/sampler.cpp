#include "data/sampler.hpp"

#include <algorithm>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "plait/sdk/error.hpp"
#include "util/json_problem.hpp"

namespace plait {

BatchSampler::BatchSampler(const SamplerSpec& spec, std::shared_ptr<const TokenFile> file,
                           std::shared_ptr<const SyntheticLanguage> synthetic)
    : spec_(spec), file_(std::move(file)), synthetic_(std::move(synthetic)) {
  PLAIT_CHECK((file_ == nullptr) != (synthetic_ == nullptr), "internal: a sampler reads a file or a synthetic source",
              "report this as a plait bug");
  PLAIT_CHECK(!spec_.mask_prompts || synthetic_ != nullptr, "internal: only synthetic data masks prompts",
              "report this as a plait bug");
  PLAIT_CHECK(!spec_.packing || file_ != nullptr, "internal: only token files are packed", "report this as a plait bug");
  if (file_ == nullptr) return;
  if (spec_.packing) {
    packed_ = pack_documents(*file_, spec_.seq_len, &packing_);
    return;
  }
  const int64_t n = file_->size();
  if (spec_.order == "sequential") {
    const int64_t global = spec_.dp_size * spec_.rows * spec_.seq_len + 1;
    PLAIT_CHECK(n >= global,
                concat("[data] ", file_->path(), " holds ", n, " tokens; one sequential global batch needs ", global,
                       " (dp ", spec_.dp_size, " x B ", spec_.rows, " x T ", spec_.seq_len, " + 1)"),
                "use a longer file, or a smaller micro_batch_size or seq_len");
  } else {
    PLAIT_CHECK(n >= spec_.seq_len + 1,
                concat("[data] ", file_->path(), " holds ", n, " tokens, fewer than seq_len + 1 = ", spec_.seq_len + 1),
                "use a longer file or a shorter seq_len");
  }
}

int64_t BatchSampler::token(int64_t position) const {
  const int64_t t = file_->at(position);
  PLAIT_CHECK(t < spec_.vocab_size,
              concat("[data] token ", t, " at position ", position, " of ", file_->path(),
                     " is not below the model's vocab_size ", spec_.vocab_size),
              "set [model] vocab_size to cover the tokenizer's vocabulary");
  return t;
}

int64_t BatchSampler::prompt_length(int64_t sample) const {
  if (!spec_.mask_prompts) return 0;
  auto rng = seeded_rng({spec_.seed, static_cast<uint64_t>(sample), 0x70726f6dull});
  const uint64_t draw = rng();
  return draw % 4 == 0 ? spec_.seq_len : static_cast<int64_t>((draw / 4) % static_cast<uint64_t>(spec_.seq_len));
}

int64_t BatchSampler::window_start(int64_t sample) const {
  auto rng = seeded_rng({spec_.seed, static_cast<uint64_t>(sample), 0xda7aull});
  return static_cast<int64_t>(rng() % static_cast<uint64_t>(file_->size() - spec_.seq_len));  // 0 .. n-T-1
}

// Counted positions in [begin, begin + length) of the file read as a ring.
int64_t BatchSampler::counted_around(int64_t begin, int64_t length) const {
  const int64_t n = file_->size();
  int64_t counted = (length / n) * file_->counted(0, n);
  begin %= n;
  length %= n;
  const int64_t end = begin + length;
  return counted + (end <= n ? file_->counted(begin, end) : file_->counted(begin, n) + file_->counted(0, end - n));
}

const PackedRow& BatchSampler::packed_row(int64_t sample) const {
  const auto rows = static_cast<uint64_t>(packed_.size());
  if (spec_.order == "sequential") return packed_[static_cast<uint64_t>(sample) % rows];
  auto rng = seeded_rng({spec_.seed, static_cast<uint64_t>(sample), 0x7061636bull});
  return packed_[rng() % rows];
}

// Each row its documents' tokens in turn, then padding (input 0, target -1) to T; a
// target the file's mask does not count is -1.
Batch BatchSampler::packed_batch(int64_t k, int64_t first) {
  const int64_t B = spec_.rows, T = spec_.seq_len;
  const auto longs = at::TensorOptions().dtype(at::kLong);
  at::Tensor inputs = at::zeros({B, T}, longs), targets = at::full({B, T}, -1, longs);
  at::Tensor documents = at::empty({B, T}, longs), positions = at::empty({B, T}, longs);
  int64_t *in = inputs.data_ptr<int64_t>(), *tgt = targets.data_ptr<int64_t>();
  int64_t *doc = documents.data_ptr<int64_t>(), *pos = positions.data_ptr<int64_t>();
  for (int64_t b = 0; b < B; ++b) {
    const PackedRow& row = packed_row(first + b);
    int64_t at = b * T;
    for (std::size_t d = 0; d <= row.segments.size(); ++d) {
      const bool padding = d == row.segments.size();
      const int64_t length = padding ? (b + 1) * T - at : row.segments[d].end - row.segments[d].begin - 1;
      for (int64_t t = 0; t < length; ++t, ++at) {
        doc[at] = static_cast<int64_t>(d);
        pos[at] = t;
        if (padding) continue;
        const int64_t from = row.segments[d].begin + t;
        in[at] = token(from);
        if (file_->counts(from + 1)) tgt[at] = token(from + 1);
      }
    }
  }
  return {std::move(inputs), std::move(targets), k, first, counted_in_batch(k), std::move(documents),
          std::move(positions)};
}

int64_t BatchSampler::counted_in_batch(int64_t k) const {
  const int64_t rows = spec_.dp_size * spec_.rows, first = k * rows, T = spec_.seq_len;
  if (spec_.packing) {
    int64_t counted = 0;
    for (int64_t s = first; s < first + rows; ++s) counted += packed_row(s).counted;
    return counted;
  }
  if (file_ != nullptr && file_->has_mask()) {
    // Row j's targets are the tokens after its first input: sequential rows tile the ring,
    // random ones are windows of their own.
    if (spec_.order == "sequential") return counted_around(first * T + 1, rows * T);
    int64_t counted = 0;
    for (int64_t s = first; s < first + rows; ++s) {
      const int64_t start = window_start(s) + 1;
      counted += file_->counted(start, start + T);
    }
    return counted;
  }
  int64_t counted = rows * T;
  if (spec_.mask_prompts) {
    for (int64_t s = first; s < first + rows; ++s) counted -= prompt_length(s);
  }
  return counted;
}

Batch BatchSampler::next() {
  const int64_t B = spec_.rows, T = spec_.seq_len, k = position_++;
  const int64_t first = (k * spec_.dp_size + spec_.dp_rank) * B;  // the run's id of row 0
  if (spec_.packing) return packed_batch(k, first);
  at::Tensor rows = at::empty({B, T + 1}, at::TensorOptions().dtype(at::kLong));
  int64_t* out = rows.data_ptr<int64_t>();
  std::vector<int64_t> file_positions(static_cast<std::size_t>(B));  // each row's first token in the file
  if (synthetic_ != nullptr) {
    for (int64_t b = 0; b < B; ++b) synthetic_->sequence(first + b, T + 1, out + b * (T + 1));
  } else {
    // Sequential row b holds tokens [start + b*T, start + b*T + T], so neighbouring rows share
    // one token, as llm.c's buf[0..B*T] viewed as inputs buf[:-1] and targets buf[1:].
    const int64_t n = file_->size();
    const int64_t start = ((k * spec_.dp_size + spec_.dp_rank) * B * T) % n;
    for (int64_t b = 0; b < B; ++b) {
      const int64_t from = spec_.order == "sequential" ? start + b * T : window_start(first + b);
      file_positions[static_cast<std::size_t>(b)] = from;
      for (int64_t t = 0; t <= T; ++t) out[b * (T + 1) + t] = token((from + t) % n);
    }
  }
  // A copy: with one row the narrowed view is already contiguous and shares the inputs' memory.
  at::Tensor targets = rows.narrow(1, 1, T).clone(at::MemoryFormat::Contiguous);
  int64_t* target = targets.data_ptr<int64_t>();
  for (int64_t b = 0; b < B; ++b) {
    std::fill_n(target + b * T, prompt_length(first + b), -1);
    if (file_ == nullptr || !file_->has_mask()) continue;
    for (int64_t t = 0; t < T; ++t) {
      if (!file_->counts((file_positions[static_cast<std::size_t>(b)] + t + 1) % file_->size())) target[b * T + t] = -1;
    }
  }
  return {rows.narrow(1, 0, T).contiguous(), std::move(targets), k, first, counted_in_batch(k), {}, {}};
}

int64_t BatchSampler::samples() const { return position_ * spec_.dp_size * spec_.rows; }

std::string BatchSampler::state() const {
  return nlohmann::json{{"order", synthetic_ ? "synthetic" : spec_.order}, {"seed", spec_.seed}, {"samples", samples()}}
      .dump();
}

void BatchSampler::restore(const std::string& state) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(state);
  } catch (const std::exception& e) {
    throw Error(concat("the checkpoint's data position is not JSON: ", json_problem(e)),
                "the checkpoint is damaged; resume from another one");
  }
  const std::string order = synthetic_ ? "synthetic" : spec_.order;
  PLAIT_CHECK(j.value("order", "") == order && j.value("seed", uint64_t{0}) == spec_.seed,
              concat("the checkpoint's data is order '", j.value("order", ""), "' seed ", j.value("seed", uint64_t{0}),
                     ", this run's is order '", order, "' seed ", spec_.seed),
              "resume with the [data] source and order and the [train] seed of the run that saved it");
  const int64_t samples = j.at("samples").get<int64_t>(), per_batch = spec_.dp_size * spec_.rows;
  // A global batch of another size (allowed by the user) starts at the batch that holds
  // the next sample: the rest of that batch is read again.
  position_ = samples / per_batch;
}

}  // namespace plait
