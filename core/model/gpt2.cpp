#include "model/gpt2.hpp"

#include <cmath>

#include <ATen/ATen.h>

#include "model/attention_core.hpp"
#include "model/document_layout.hpp"
#include "model/dropout.hpp"
#include "plait/sdk/error.hpp"

namespace plait {
namespace {

// wte(idx) + wpe(positions): [B, T] ids -> [B, T, C].
class Embeddings final : public Layer {
 public:
  Embeddings(const ModelSpec& s, LayerFactory& f, const InitSpec& init)
      : drop_("transformer.drop", s.dropout, sequence_part_of(f)) {
    wte = register_module("wte", f.embedding({"transformer.wte", s.vocab_size, s.n_embd, 0.02, true}, init));
    wpe = register_module("wpe", f.embedding({"transformer.wpe", s.block_size, s.n_embd, 0.02, false}, init));
    enter_blocks_ = f.blocks_entry();
  }
  at::Tensor forward(const at::Tensor& idx) override {
    const DocumentLayout* documents = current_document_layout();  // packed rows: positions restart per document
    const at::Tensor pos = documents != nullptr ? documents->positions : at::arange(idx.size(1), idx.options().dtype(at::kLong));
    return drop_(enter_blocks_->forward(wte->forward(idx) + wpe->forward(pos)));
  }
  std::shared_ptr<Layer> wte, wpe;

 private:
  std::shared_ptr<Layer> enter_blocks_;
  SiteDropout drop_;
};

class CausalSelfAttention final : public torch::nn::Module {
 public:
  CausalSelfAttention(const ModelSpec& s, LayerFactory& f, const InitSpec& init, const std::string& name)
      : n_head_(s.n_head / f.shard_count()), head_dim_(s.head_dim()) {
    PLAIT_CHECK(s.n_head % f.shard_count() == 0,
                concat(name, ": ", s.n_head, " attention heads do not split evenly over ", f.shard_count(),
                       " tensor-parallel ranks"),
                "choose parallel.tp dividing model.n_head");
    c_attn = register_module("c_attn", f.linear({name + ".c_attn", s.n_embd, 3 * s.n_embd, true, 0.02,
                                                 Split::column, 3}, init));
    core = register_module("core", std::make_shared<AttentionCore>(s.attention));
    // GPT-2's scaled init of residual projections.
    c_proj = register_module("c_proj", f.linear({name + ".c_proj", s.n_embd, s.n_embd, true,
                                                 0.02 / std::sqrt(2.0 * s.n_layer), Split::row}, init));
  }
  at::Tensor forward(const at::Tensor& x) {
    auto qkv = c_attn->forward(x).split(n_head_ * head_dim_, 2);
    // The sequence length is the projection's (x may hold a sequence-parallel part).
    const int64_t B = x.size(0), T = qkv[0].size(1);
    auto heads = [&](const at::Tensor& t) { return t.view({B, T, n_head_, head_dim_}).transpose(1, 2); };
    at::Tensor y = core->forward(heads(qkv[0]), heads(qkv[1]), heads(qkv[2]));
    y = y.transpose(1, 2).contiguous().view({B, T, n_head_ * head_dim_});
    return c_proj->forward(y);
  }
  std::shared_ptr<Layer> c_attn, c_proj;
  std::shared_ptr<AttentionCore> core;

 private:
  int64_t n_head_, head_dim_;
};

class Mlp final : public torch::nn::Module {
 public:
  Mlp(const ModelSpec& s, LayerFactory& f, const InitSpec& init, const std::string& name) {
    c_fc = register_module("c_fc", f.linear({name + ".c_fc", s.n_embd, s.ffn_hidden, true, 0.02, Split::column}, init));
    c_proj = register_module("c_proj", f.linear({name + ".c_proj", s.ffn_hidden, s.n_embd, true,
                                                 0.02 / std::sqrt(2.0 * s.n_layer), Split::row}, init));
  }
  at::Tensor forward(const at::Tensor& x) { return c_proj->forward(at::gelu(c_fc->forward(x))); }
  std::shared_ptr<Layer> c_fc, c_proj;
};

class Block final : public Layer {
 public:
  Block(const ModelSpec& s, LayerFactory& f, const InitSpec& init, const std::string& name)
      : attn_drop_(name + ".attn.resid_dropout", s.dropout, sequence_part_of(f)),
        mlp_drop_(name + ".mlp.dropout", s.dropout, sequence_part_of(f)) {
    ln_1 = register_module("ln_1", f.norm({name + ".ln_1", s.n_embd, s.norm_eps, NormKind::layer}, init));
    attn = register_module("attn", std::make_shared<CausalSelfAttention>(s, f, init, name + ".attn"));
    ln_2 = register_module("ln_2", f.norm({name + ".ln_2", s.n_embd, s.norm_eps, NormKind::layer}, init));
    mlp = register_module("mlp", std::make_shared<Mlp>(s, f, init, name + ".mlp"));
  }
  at::Tensor forward(const at::Tensor& x) override {
    at::Tensor h = x + attn_drop_(attn->forward(ln_1->forward(x)));
    return h + mlp_drop_(mlp->forward(ln_2->forward(h)));
  }
  std::shared_ptr<Layer> ln_1, ln_2;
  std::shared_ptr<CausalSelfAttention> attn;
  std::shared_ptr<Mlp> mlp;

 private:
  SiteDropout attn_drop_, mlp_drop_;  // on the residual stream, so on the sequence part under SP
};

// ln_f, then logits through the tied lm_head: [B, T, C] -> [B, T, V].
class Head final : public Layer {
 public:
  Head(const ModelSpec& s, LayerFactory& f, const InitSpec& init, const std::shared_ptr<Layer>& wte) {
    ln_f = register_module("ln_f", f.norm({"transformer.ln_f", s.n_embd, s.norm_eps, NormKind::layer}, init));
    lm_head_ = f.tied_linear(wte);  // not registered: its weight is wte's
  }
  at::Tensor forward(const at::Tensor& x) override { return lm_head_->forward(ln_f->forward(x)); }
  std::shared_ptr<Layer> ln_f;

 private:
  std::shared_ptr<Layer> lm_head_;
};

}  // namespace

StageModel build_gpt2(const ModelSpec& spec, LayerFactory& factory, const InitSpec& init,
                      const UnitFilter& materialise) {
  StageModel model;
  auto init_of = [&](std::size_t unit) { return init_for_unit(init, materialise, unit); };
  auto embeddings = std::make_shared<Embeddings>(spec, factory, init_of(0));
  model.units.push_back({"transformer.", UnitKind::embedding, embeddings, {}});
  for (int64_t i = 0; i < spec.n_layer; ++i) {
    const std::string prefix = "transformer.h." + std::to_string(i);
    model.units.push_back({prefix + ".", UnitKind::block,
                           std::make_shared<Block>(spec, factory, init_of(model.units.size()), prefix), {}});
  }
  model.units.push_back({"transformer.", UnitKind::head,
                         std::make_shared<Head>(spec, factory, init_of(model.units.size()), embeddings->wte),
                         {"transformer.wte.weight"}});
  return model;
}

}  // namespace plait
