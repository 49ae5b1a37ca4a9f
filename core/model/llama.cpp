#include "model/llama.hpp"

#include <ATen/ATen.h>

#include "model/attention_core.hpp"
#include "model/document_layout.hpp"
#include "model/dropout.hpp"
#include "plait/sdk/error.hpp"

namespace plait {
namespace {

class Embeddings final : public Layer {
 public:
  Embeddings(const ModelSpec& s, LayerFactory& f, const InitSpec& init)
      : drop_("model.embed_dropout", s.dropout, sequence_part_of(f)) {
    embed_tokens = register_module(
        "embed_tokens", f.embedding({"model.embed_tokens", s.vocab_size, s.n_embd, 0.02, true}, init));
    enter_blocks_ = f.blocks_entry();
  }
  at::Tensor forward(const at::Tensor& idx) override { return drop_(enter_blocks_->forward(embed_tokens->forward(idx))); }
  std::shared_ptr<Layer> embed_tokens;

 private:
  std::shared_ptr<Layer> enter_blocks_;
  SiteDropout drop_;
};

// cos and sin tables for positions 0..block_size-1, [T, Q], as HF's LlamaRotaryEmbedding.
struct Rotary {
  at::Tensor cos, sin;
  Rotary(const ModelSpec& s, const at::TensorOptions& options) {
    const int64_t Q = s.head_dim();
    auto f32 = at::TensorOptions().dtype(at::kFloat);
    if (options.device().is_meta()) {  // shapes only (a model's layout, the planner's measured rank)
      cos = at::empty({s.block_size, Q}, f32.device(at::kMeta));
      sin = at::empty({s.block_size, Q}, f32.device(at::kMeta));
      return;
    }
    at::Tensor inv_freq = 1.0 / at::pow(s.rope_theta, at::arange(0, Q, 2, f32) / static_cast<double>(Q));
    at::Tensor freqs = at::outer(at::arange(s.block_size, f32), inv_freq);
    at::Tensor emb = at::cat({freqs, freqs}, -1);
    cos = emb.cos().to(options.device());
    sin = emb.sin().to(options.device());
  }
  static at::Tensor rotate_half(const at::Tensor& x) {
    auto halves = x.chunk(2, -1);
    return at::cat({-halves[1], halves[0]}, -1);
  }
  // x: [B, heads, T, Q]; packed rows (document_layout.hpp) rotate by each position's
  // place within its document.
  at::Tensor apply(const at::Tensor& x) const {
    const int64_t T = x.size(2);
    at::Tensor c, s;
    if (const DocumentLayout* documents = current_document_layout()) {
      c = documents->rows_of(cos, x.scalar_type());
      s = documents->rows_of(sin, x.scalar_type());
    } else {
      c = cos.narrow(0, 0, T).to(x.scalar_type());
      s = sin.narrow(0, 0, T).to(x.scalar_type());
    }
    return x * c + rotate_half(x) * s;
  }
};

class Attention final : public torch::nn::Module {
 public:
  Attention(const ModelSpec& s, LayerFactory& f, const InitSpec& init, const std::string& name,
            std::shared_ptr<const Rotary> rotary)
      : n_head_(s.n_head / f.shard_count()),
        n_kv_head_(s.n_kv_head / f.shard_count()),
        head_dim_(s.head_dim()),
        rotary_(std::move(rotary)) {
    PLAIT_CHECK(s.n_head % f.shard_count() == 0 && s.n_kv_head % f.shard_count() == 0,
                concat(name, ": ", s.n_head, " attention heads and ", s.n_kv_head,
                       " key/value heads must both split evenly over ", f.shard_count(), " tensor-parallel ranks"),
                "choose parallel.tp dividing model.n_kv_head (grouped-query heads are not replicated across tp)");
    const int64_t C = s.n_embd, KV = s.n_kv_head * s.head_dim();
    // q, k and v read the same input: one product, registered as q_proj, k_proj, v_proj.
    qkv_ = f.fused_linear({{name + ".q_proj", C, C, false, 0.02, Split::column},
                           {name + ".k_proj", C, KV, false, 0.02, Split::column},
                           {name + ".v_proj", C, KV, false, 0.02, Split::column}},
                          init);
    for (const auto& part : qkv_->named_children()) register_module(part.key(), part.value());
    o_proj = register_module("o_proj", f.linear({name + ".o_proj", C, C, false, 0.02, Split::row}, init));
    core = register_module("core", std::make_shared<AttentionCore>(s.attention));
  }
  at::Tensor forward(const at::Tensor& x) {
    // The sequence length is the projections' (x may hold a sequence-parallel part).
    const int64_t B = x.size(0);
    auto heads = [&](const at::Tensor& t, int64_t n) { return t.view({B, t.size(1), n, head_dim_}).transpose(1, 2); };
    const auto qkv = qkv_->forward(x).split_with_sizes({n_head_ * head_dim_, n_kv_head_ * head_dim_, n_kv_head_ * head_dim_}, -1);
    at::Tensor q = rotary_->apply(heads(qkv[0], n_head_));
    at::Tensor k = rotary_->apply(heads(qkv[1], n_kv_head_));
    at::Tensor v = heads(qkv[2], n_kv_head_);
    if (n_kv_head_ != n_head_) {  // HF's repeat_kv
      k = k.repeat_interleave(n_head_ / n_kv_head_, 1);
      v = v.repeat_interleave(n_head_ / n_kv_head_, 1);
    }
    at::Tensor y = core->forward(q, k, v);
    return o_proj->forward(y.transpose(1, 2).contiguous().view({B, y.size(2), n_head_ * head_dim_}));
  }
  std::shared_ptr<Layer> o_proj;
  std::shared_ptr<AttentionCore> core;

 private:
  std::shared_ptr<Layer> qkv_;
  int64_t n_head_, n_kv_head_, head_dim_;
  std::shared_ptr<const Rotary> rotary_;
};

class Mlp final : public torch::nn::Module {
 public:
  Mlp(const ModelSpec& s, LayerFactory& f, const InitSpec& init, const std::string& name) {
    const int64_t C = s.n_embd, F = s.ffn_hidden;
    // gate and up read the same input: one product, registered as gate_proj, up_proj.
    gate_up_ = f.fused_linear({{name + ".gate_proj", C, F, false, 0.02, Split::column},
                               {name + ".up_proj", C, F, false, 0.02, Split::column}},
                              init);
    for (const auto& part : gate_up_->named_children()) register_module(part.key(), part.value());
    down_proj = register_module("down_proj", f.linear({name + ".down_proj", F, C, false, 0.02, Split::row}, init));
  }
  at::Tensor forward(const at::Tensor& x) {
    const auto gate_up = gate_up_->forward(x).chunk(2, -1);
    return down_proj->forward(at::silu(gate_up[0]) * gate_up[1]);
  }
  std::shared_ptr<Layer> down_proj;

 private:
  std::shared_ptr<Layer> gate_up_;
};

class DecoderLayer final : public Layer {
 public:
  DecoderLayer(const ModelSpec& s, LayerFactory& f, const InitSpec& init, const std::string& name,
               std::shared_ptr<const Rotary> rotary)
      : attn_drop_(name + ".self_attn.resid_dropout", s.dropout, sequence_part_of(f)),
        mlp_drop_(name + ".mlp.dropout", s.dropout, sequence_part_of(f)) {
    input_layernorm = register_module("input_layernorm", f.norm({name + ".input_layernorm", s.n_embd, s.norm_eps, NormKind::rms}, init));
    self_attn = register_module("self_attn", std::make_shared<Attention>(s, f, init, name + ".self_attn", rotary));
    post_attention_layernorm = register_module(
        "post_attention_layernorm", f.norm({name + ".post_attention_layernorm", s.n_embd, s.norm_eps, NormKind::rms}, init));
    mlp = register_module("mlp", std::make_shared<Mlp>(s, f, init, name + ".mlp"));
  }
  at::Tensor forward(const at::Tensor& x) override {
    at::Tensor h = x + attn_drop_(self_attn->forward(input_layernorm->forward(x)));
    return h + mlp_drop_(mlp->forward(post_attention_layernorm->forward(h)));
  }
  std::shared_ptr<Layer> input_layernorm, post_attention_layernorm;
  std::shared_ptr<Attention> self_attn;
  std::shared_ptr<Mlp> mlp;

 private:
  SiteDropout attn_drop_, mlp_drop_;  // on the residual stream, so on the sequence part under SP
};

// "model.norm" then "lm_head": registered under those names so the reference names come out.
class Head final : public Layer {
 public:
  Head(const ModelSpec& s, LayerFactory& f, const InitSpec& init) {
    model_ = register_module("model", std::make_shared<torch::nn::Module>());
    norm_ = model_->register_module("norm", f.norm({"model.norm", s.n_embd, s.norm_eps, NormKind::rms}, init));
    lm_head = register_module("lm_head", f.linear({"lm_head", s.n_embd, s.vocab_size, false, 0.02, Split::column, 1, /*output_head=*/true}, init));
  }
  at::Tensor forward(const at::Tensor& x) override { return lm_head->forward(norm_->forward(x)); }
  std::shared_ptr<Layer> lm_head;

 private:
  std::shared_ptr<torch::nn::Module> model_;
  std::shared_ptr<Layer> norm_;
};

}  // namespace

StageModel build_llama(const ModelSpec& spec, LayerFactory& factory, const InitSpec& init,
                       const UnitFilter& materialise) {
  StageModel model;
  auto init_of = [&](std::size_t unit) { return init_for_unit(init, materialise, unit); };
  model.units.push_back({"model.", UnitKind::embedding, std::make_shared<Embeddings>(spec, factory, init_of(0)), {}});
  auto rotary = std::make_shared<const Rotary>(spec, init.options);  // shared by every block: always real
  for (int64_t i = 0; i < spec.n_layer; ++i) {
    const std::string prefix = "model.layers." + std::to_string(i);
    model.units.push_back({prefix + ".", UnitKind::block,
                           std::make_shared<DecoderLayer>(spec, factory, init_of(model.units.size()), prefix, rotary),
                           {}});
  }
  model.units.push_back({"", UnitKind::head, std::make_shared<Head>(spec, factory, init_of(model.units.size())), {}});
  return model;
}

}  // namespace plait
