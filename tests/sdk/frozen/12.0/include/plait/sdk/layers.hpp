#pragma once
// The layer factory the model zoo builds every parametrised layer through. The core's
// default factory makes ordinary dense layers; a tensor-parallel plugin supplies one
// that makes sharded layers instead, without the model code changing.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <ATen/ATen.h>

#include "plait/sdk/model.hpp"
#include "plait/sdk/norms.hpp"

namespace plait {

// How a tensor-parallel factory may split a linear layer (Megatron's terms).
enum class Split { none, column, row };

struct InitSpec {
  uint64_t seed = 0;          // the run's seed; see init.hpp
  at::TensorOptions options;  // dtype and device of the parameters
};

struct LinearSpec {
  std::string name;  // full parameter prefix, e.g. "transformer.h.0.attn.c_attn"
  int64_t in_features = 0;
  int64_t out_features = 0;
  bool bias = true;
  double init_std = 0.02;
  Split split = Split::none;
  int64_t fused_parts = 1;  // e.g. 3 for a fused q|k|v projection: each part splits alike
  // The model's output head (logits over the vocabulary). A factory whose
  // token_loss_sum takes vocabulary slices may return them; otherwise a column split's
  // slices are all-gathered along the last dimension.
  bool output_head = false;
  // The last component of `name` ("c_attn"): a fused group's child module name.
  std::string child_name() const { return name.substr(name.rfind('.') + 1); }
};

struct EmbeddingSpec {
  std::string name;  // e.g. "transformer.wte"
  int64_t num_embeddings = 0;
  int64_t dim = 0;
  double init_std = 0.02;
  bool vocab_split = false;  // may be split along the vocabulary
};

enum class NormKind { layer, rms };  // torch's LayerNorm (weight and bias), HF's RMSNorm

struct NormSpec {
  std::string name;  // e.g. "transformer.h.0.ln_1"
  int64_t dim = 0;
  double eps = 1e-5;
  NormKind kind = NormKind::layer;
};

class PLAIT_SDK_VISIBLE LayerFactory {
 public:
  virtual ~LayerFactory() = default;
  // y = x W^T + b, W stored [out, in] (torch's layout).
  virtual std::shared_ptr<Layer> linear(const LinearSpec& spec, const InitSpec& init) = 0;
  // Linears that read the same input (llama's q/k/v projections, its gate/up), computed
  // as one: a tensor-parallel factory makes the input whole once for all of them. The
  // layer's children are the parts, named by the last component of each spec's name, for
  // the model to register under its own module (so the reference names come out); its
  // forward returns their outputs concatenated along the last dimension (under tensor
  // parallel, each part's slice).
  virtual std::shared_ptr<Layer> fused_linear(const std::vector<LinearSpec>& parts, const InitSpec& init) {
    auto fused = std::make_shared<Concatenated>();
    for (const auto& spec : parts) fused->add(spec.child_name(), linear(spec, init));
    return fused;
  }
  // Long ids -> vectors.
  virtual std::shared_ptr<Layer> embedding(const EmbeddingSpec& spec, const InitSpec& init) = 0;
  // x E^T with the weight of an embedding made by this factory (a tied output head).
  virtual std::shared_ptr<Layer> tied_linear(const std::shared_ptr<Layer>& embedding) = 0;
  // A normalisation layer over the last dimension.
  virtual std::shared_ptr<Layer> norm(const NormSpec& spec, const InitSpec& init) {
    if (spec.kind == NormKind::rms) return std::make_shared<RMSNorm>(spec.dim, spec.eps, init.options);
    return std::make_shared<LayerNorm>(spec.dim, spec.eps, init.options);
  }
  // Ways the tensor-parallel axis splits heads and hidden units (1 without TP).
  virtual int64_t shard_count() const { return 1; }

  // Sequence parallelism. The model runs its embeddings' output [B, T, C] through
  // this layer before the first block; the blocks (and the activations a pipeline sends
  // between stages) then hold T / sequence_shards() positions, and the factory's layers
  // make the sequence whole where they need it (the output head returns logits for
  // every position). The default passes everything through.
  virtual std::shared_ptr<Layer> blocks_entry() { return std::make_shared<PassThrough>(); }
  virtual int64_t sequence_shards() const { return 1; }
  // Which part this rank holds: positions [i * T / n, (i + 1) * T / n) of each sequence,
  // i = sequence_shard(), n = sequence_shards(). Layers keyed on global positions (the
  // core's dropout) read it.
  virtual int64_t sequence_shard() const { return 0; }

  // The sum of token losses (cross-entropy; targets of -1 are ignored) of what this
  // factory's output head returned, which may be vocabulary slices (Megatron's
  // vocab-parallel loss). The default takes whole logits.
  virtual at::Tensor token_loss_sum(const at::Tensor& logits, const at::Tensor& targets) {
    at::Tensor flat = logits.reshape({-1, logits.size(-1)});
    if (flat.scalar_type() == at::kBFloat16) flat = flat.to(at::kFloat);
    return at::cross_entropy_loss(flat, targets.reshape({-1}), {}, at::Reduction::Sum, /*ignore_index=*/-1);
  }
  // Whole logits from what the output head returned (debug dumps). Collective over the
  // tensor-parallel group when the head returns slices: every tp rank calls it.
  virtual at::Tensor whole_logits(const at::Tensor& logits) { return logits; }

  // Interfaces a later minor version adds to factories (plugin.hpp, extension()).
  virtual void* find_extension(std::string_view id) { return nullptr; }

 private:
  class PassThrough final : public Layer {
   public:
    at::Tensor forward(const at::Tensor& x) override { return x; }
  };
  class Concatenated final : public Layer {
   public:
    void add(const std::string& name, std::shared_ptr<Layer> part) { parts_.push_back(register_module(name, part)); }
    at::Tensor forward(const at::Tensor& x) override {
      std::vector<at::Tensor> outs;
      for (const auto& part : parts_) outs.push_back(part->forward(x));
      return at::cat(outs, -1);
    }

   private:
    std::vector<std::shared_ptr<Layer>> parts_;
  };
};

}  // namespace plait
