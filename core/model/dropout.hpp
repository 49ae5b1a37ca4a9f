#pragma once
// Dropout on the residual stream ([model] dropout: after the embeddings and after each
// block's attention and MLP output), with masks that do not depend on the strategy.
//
// torch's dropout draws from a generator, so its mask depends on which rank runs which
// rows and positions in which order: switching dp, pp, tp, sequence parallel or the
// checkpointing mode would change what is dropped, and the loss with it. Here whether an
// element is kept is a hash of (seed, site, global sample, global position, feature):
// every strategy drops the same elements as the single process, a sequence-parallel
// rank computes its part of the mask from its positions alone, and a recomputation
// (activation checkpointing) drops exactly what the forward dropped.
#include <cstdint>
#include <optional>
#include <string>

#include <ATen/core/Tensor.h>

namespace plait {

class LayerFactory;

// What a forward runs on: rows first_sample, first_sample + 1, ... of the run's sample
// stream (row j of global batch k is sample k * global_rows + j), and the run's seed.
struct DropoutStream {
  uint64_t seed = 0;
  int64_t first_sample = 0;
};

// Sets this thread's stream while alive: the executor around each forward, activation
// checkpointing around its recomputation (which may run on autograd's device thread).
class DropoutScope {
 public:
  explicit DropoutScope(std::optional<DropoutStream> stream);
  ~DropoutScope();
  DropoutScope(const DropoutScope&) = delete;
  DropoutScope& operator=(const DropoutScope&) = delete;

 private:
  std::optional<DropoutStream> previous_;
};

std::optional<DropoutStream> current_dropout_stream();

// The positions a tensor holds: part `index` of `count` equal parts of each sequence
// (LayerFactory::sequence_shard / sequence_shards).
struct SequencePart {
  int64_t index = 0;
  int64_t count = 1;
};

// The part of each sequence the blocks of a model made by `factory` hold.
SequencePart sequence_part_of(const LayerFactory& factory);

// Which elements of x [B, P, C] to keep (bool), P = T / part.count positions from
// part.index * P and features from first_feature (a tensor-parallel slice), each dropped
// with probability p.
at::Tensor dropout_keep_mask(const at::Tensor& x, const std::string& site, double p, const DropoutStream& stream,
                             SequencePart part, int64_t first_feature = 0);

// One dropout site of the model, e.g. "transformer.h.3.attn.resid_dropout".
class SiteDropout {
 public:
  SiteDropout(std::string site, double p, SequencePart part, int64_t first_feature = 0);
  // x * keep / (1 - p); x itself when p = 0. Refused outside a stream (a forward the
  // executor did not start), since no mask could be the single process's.
  at::Tensor operator()(const at::Tensor& x) const;

 private:
  std::string site_;
  double p_;
  SequencePart part_;
  int64_t first_feature_ = 0;
};

}  // namespace plait
