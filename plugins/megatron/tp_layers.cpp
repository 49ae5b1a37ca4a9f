#include "tp_layers.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include "plait/sdk/error.hpp"
#include "plait/sdk/init.hpp"

namespace plait::megatron {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

Communicator* group_of(AutogradContext* ctx) { return reinterpret_cast<Communicator*>(ctx->saved_data["tp"].toInt()); }

void all_reduce(Communicator* tp, at::Tensor& t, const char* phase) {
  AllReduceOptions o;
  o.tag = {"megatron", phase, "", -1};
  tp->all_reduce(t, o)->wait();
}

// Megatron's f: identity forward; the input gradient is summed over the tp ranks
// (each holds the part that flowed through its columns).
struct CopyToTp : public torch::autograd::Function<CopyToTp> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, Communicator* tp) {
    ctx->saved_data["tp"] = reinterpret_cast<int64_t>(tp);
    return x.view_as(x);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    at::Tensor g = grads[0].contiguous().clone();
    all_reduce(group_of(ctx), g, "column-input-grad");
    return {g, at::Tensor()};
  }
};

// Megatron's g: the partial sums of a row-parallel layer are all-reduced forward;
// the gradient passes through.
struct ReduceFromTp : public torch::autograd::Function<ReduceFromTp> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, Communicator* tp, const char* phase) {
    at::Tensor y = x.contiguous().clone();
    all_reduce(tp, y, phase);
    (void)ctx;
    return y;
  }
  static variable_list backward(AutogradContext*, variable_list grads) { return {grads[0], at::Tensor(), at::Tensor()}; }
};

// Column slices made whole: all-gathered along the last dimension forward; backward
// keeps this rank's slice of the gradient.
struct GatherFromTp : public torch::autograd::Function<GatherFromTp> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, Communicator* tp) {
    ctx->saved_data["tp"] = reinterpret_cast<int64_t>(tp);
    at::Tensor mine = x.contiguous().reshape({-1});
    at::Tensor all = at::empty({tp->size() * mine.numel()}, mine.options());
    CommOptions o;
    o.tag = {"megatron", "column-output-gather", "", -1};
    tp->all_gather(all, mine, o)->wait();
    std::vector<int64_t> shape = {tp->size()};
    for (int64_t d : x.sizes()) shape.push_back(d);
    return at::cat(all.view(shape).unbind(0), -1);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    Communicator* tp = group_of(ctx);
    const int64_t n = grads[0].size(-1) / tp->size();
    return {grads[0].narrow(-1, tp->rank() * n, n).contiguous(), at::Tensor()};
  }
};

// This rank's slice of `full` along `dim`, which holds `parts` equal tensors stacked.
at::Tensor slice_of(const at::Tensor& full, int64_t dim, int64_t parts, const TpPlace& tp) {
  const int64_t part = full.size(dim) / parts, n = part / tp.ways;
  std::vector<at::Tensor> pieces;
  for (int64_t p = 0; p < parts; ++p) pieces.push_back(full.narrow(dim, p * part + tp.rank * n, n));
  return at::cat(pieces, dim).contiguous();
}

class ColumnLinear final : public Layer {
 public:
  ColumnLinear(const LinearSpec& spec, const InitSpec& init, const TpPlace& tp)
      : tp_(tp), parts_(spec.fused_parts), gather_output_(spec.output_head && !tp.vocab_parallel) {
    PLAIT_CHECK(spec.out_features % (spec.fused_parts * tp.ways) == 0,
                concat("megatron: ", spec.name, " has ", spec.out_features, " outputs in ", spec.fused_parts,
                       " parts, which do not split over ", tp.ways, " tensor-parallel ranks"),
                "choose parallel.tp dividing the model's widths");
    at::Tensor full = seeded_normal({spec.out_features, spec.in_features}, spec.init_std, init.seed,
                                    spec.name + ".weight", init.options);
    weight_ = register_parameter("weight", slice_of(full, 0, parts_, tp));
    if (spec.bias) bias_ = register_parameter("bias", filled({spec.out_features / tp.ways}, 0.0, init.options));
  }
  at::Tensor forward(const at::Tensor& x) override {
    const at::Tensor input = tp_.group ? CopyToTp::apply(x, tp_.group) : x;
    at::Tensor y = at::linear(input, weight_, bias_);
    return gather_output_ && tp_.group ? GatherFromTp::apply(y, tp_.group) : y;
  }
  TensorSplit split_of(const std::string&) const override { return {0, parts_}; }

 private:
  TpPlace tp_;
  int64_t parts_;
  bool gather_output_;
  at::Tensor weight_, bias_;
};

class RowLinear final : public Layer {
 public:
  RowLinear(const LinearSpec& spec, const InitSpec& init, const TpPlace& tp) : tp_(tp) {
    PLAIT_CHECK(spec.in_features % tp.ways == 0,
                concat("megatron: ", spec.name, " has ", spec.in_features, " inputs, which do not split over ", tp.ways,
                       " tensor-parallel ranks"),
                "choose parallel.tp dividing the model's widths");
    at::Tensor full = seeded_normal({spec.out_features, spec.in_features}, spec.init_std, init.seed,
                                    spec.name + ".weight", init.options);
    weight_ = register_parameter("weight", slice_of(full, 1, 1, tp));
    if (spec.bias) bias_ = register_parameter("bias", filled({spec.out_features}, 0.0, init.options));
  }
  at::Tensor forward(const at::Tensor& x) override {
    at::Tensor y = at::linear(x, weight_);
    if (tp_.group) y = ReduceFromTp::apply(y, tp_.group, "row-output");
    return bias_.defined() ? y + bias_ : y;  // the bias is added once, after the sum
  }
  TensorSplit split_of(const std::string& name) const override {
    return name == "weight" ? TensorSplit{1, 1} : TensorSplit{};
  }

 private:
  TpPlace tp_;
  at::Tensor weight_, bias_;
};

class Linear final : public Layer {
 public:
  Linear(const LinearSpec& spec, const InitSpec& init) {
    weight_ = register_parameter("weight", seeded_normal({spec.out_features, spec.in_features}, spec.init_std,
                                                         init.seed, spec.name + ".weight", init.options));
    if (spec.bias) bias_ = register_parameter("bias", filled({spec.out_features}, 0.0, init.options));
  }
  at::Tensor forward(const at::Tensor& x) override { return at::linear(x, weight_, bias_); }

 private:
  at::Tensor weight_, bias_;
};

class Embedding final : public Layer {
 public:
  Embedding(const EmbeddingSpec& spec, const InitSpec& init) {
    weight_ = register_parameter("weight", seeded_normal({spec.num_embeddings, spec.dim}, spec.init_std, init.seed,
                                                         spec.name + ".weight", init.options));
  }
  at::Tensor forward(const at::Tensor& ids) override { return at::embedding(weight_, ids); }
  const at::Tensor& weight() const { return weight_; }

 private:
  at::Tensor weight_;
};

class TiedHead final : public Layer {
 public:
  explicit TiedHead(std::shared_ptr<Embedding> embedding) : embedding_(std::move(embedding)) {}
  at::Tensor forward(const at::Tensor& x) override { return at::linear(x, embedding_->weight()); }

 private:
  std::shared_ptr<Embedding> embedding_;
};

// The token embedding split along the vocabulary (Megatron's VocabParallelEmbedding):
// rank r keeps rows [r V/t, (r+1) V/t); ids outside them look up zeros, and the
// partial vectors are summed over the tp ranks.
class VocabEmbedding final : public Layer {
 public:
  VocabEmbedding(const EmbeddingSpec& spec, const InitSpec& init, const TpPlace& tp) : tp_(tp) {
    PLAIT_CHECK(spec.num_embeddings % tp.ways == 0,
                concat("megatron: ", spec.name, " has ", spec.num_embeddings, " rows, which do not split over ",
                       tp.ways, " tensor-parallel ranks"),
                "set [model] vocab_size to a multiple of parallel.tp, or [megatron] vocab_parallel = false");
    at::Tensor full = seeded_normal({spec.num_embeddings, spec.dim}, spec.init_std, init.seed, spec.name + ".weight",
                                    init.options);
    weight_ = register_parameter("weight", slice_of(full, 0, 1, tp));
    first_ = tp.rank * weight_.size(0);
  }
  at::Tensor forward(const at::Tensor& ids) override {
    const at::Tensor outside = ids.lt(first_).logical_or(ids.ge(first_ + weight_.size(0)));
    at::Tensor local = at::embedding(weight_, (ids - first_).masked_fill(outside, 0));
    local = local.masked_fill(outside.unsqueeze(-1), 0.0);
    return ReduceFromTp::apply(local, tp_.group, "vocab-embedding");
  }
  TensorSplit split_of(const std::string&) const override { return {0, 1}; }
  const at::Tensor& weight() const { return weight_; }

 private:
  TpPlace tp_;
  at::Tensor weight_;
  int64_t first_ = 0;
};

// x E_r^T with this rank's vocabulary rows: logits for V/t of the vocabulary.
class VocabTiedHead final : public Layer {
 public:
  VocabTiedHead(std::shared_ptr<VocabEmbedding> embedding, const TpPlace& tp)
      : embedding_(std::move(embedding)), tp_(tp) {}
  at::Tensor forward(const at::Tensor& x) override {
    return at::linear(CopyToTp::apply(x, tp_.group), embedding_->weight());
  }

 private:
  std::shared_ptr<VocabEmbedding> embedding_;
  TpPlace tp_;
};

// Megatron's vocab-parallel cross-entropy: the softmax over the whole vocabulary from
// each rank's slice of the logits, with three all-reduces of one number per token (the
// max, the sum of exponentials, the target's logit) instead of gathering the logits.
struct VocabCrossEntropy : public torch::autograd::Function<VocabCrossEntropy> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& logits, const at::Tensor& targets,
                            Communicator* tp) {
    const int64_t slice = logits.size(-1), first = tp->rank() * slice;
    at::Tensor flat = logits.reshape({-1, slice});
    if (flat.scalar_type() == at::kBFloat16) flat = flat.to(at::kFloat);
    const at::Tensor target = targets.reshape({-1});
    const at::Tensor valid = target.ne(-1);
    const at::Tensor here = target.ge(first).logical_and(target.lt(first + slice)).logical_and(valid);
    const at::Tensor local_target = (target - first).masked_fill(here.logical_not(), 0);

    at::Tensor max = std::get<0>(flat.max(-1)).contiguous();
    AllReduceOptions o;
    o.op = ReduceOp::max;
    o.tag = {"megatron", "vocab-ce-max", "", -1};
    tp->all_reduce(max, o)->wait();
    const at::Tensor shifted = flat - max.unsqueeze(-1);
    at::Tensor exp = shifted.exp();
    at::Tensor sum_exp = exp.sum(-1).contiguous();
    all_reduce(tp, sum_exp, "vocab-ce-sum-exp");
    at::Tensor target_logit = shifted.gather(-1, local_target.unsqueeze(-1)).squeeze(-1).masked_fill(here.logical_not(), 0.0).contiguous();
    all_reduce(tp, target_logit, "vocab-ce-target");
    const at::Tensor loss = (sum_exp.log() - target_logit).masked_fill(valid.logical_not(), 0.0);

    ctx->save_for_backward({exp / sum_exp.unsqueeze(-1), local_target, here, valid});
    ctx->saved_data["shape"] = logits.sizes().vec();
    ctx->saved_data["dtype"] = logits.scalar_type();
    return loss.sum();
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    at::Tensor g = saved[0].clone();  // softmax
    g.scatter_add_(-1, saved[1].unsqueeze(-1), -saved[2].to(g.scalar_type()).unsqueeze(-1));
    g.mul_(saved[3].to(g.scalar_type()).unsqueeze(-1)).mul_(grads[0]);
    return {g.view(ctx->saved_data["shape"].toIntVector()).to(ctx->saved_data["dtype"].toScalarType()), at::Tensor(),
            at::Tensor()};
  }
};

}  // namespace

std::shared_ptr<Layer> column_linear(const LinearSpec& spec, const InitSpec& init, const TpPlace& tp) {
  return std::make_shared<ColumnLinear>(spec, init, tp);
}
std::shared_ptr<Layer> row_linear(const LinearSpec& spec, const InitSpec& init, const TpPlace& tp) {
  return std::make_shared<RowLinear>(spec, init, tp);
}
std::shared_ptr<Layer> replicated_linear(const LinearSpec& spec, const InitSpec& init) {
  return std::make_shared<Linear>(spec, init);
}
std::shared_ptr<Layer> embedding(const EmbeddingSpec& spec, const InitSpec& init, const TpPlace& tp) {
  if (spec.vocab_split && tp.vocab_parallel && tp.group != nullptr) return std::make_shared<VocabEmbedding>(spec, init, tp);
  return std::make_shared<Embedding>(spec, init);
}
std::shared_ptr<Layer> tied_head(const std::shared_ptr<Layer>& embedding, const TpPlace& tp) {
  if (auto v = std::dynamic_pointer_cast<VocabEmbedding>(embedding)) return std::make_shared<VocabTiedHead>(std::move(v), tp);
  auto e = std::dynamic_pointer_cast<Embedding>(embedding);
  PLAIT_CHECK(e != nullptr, "megatron: tied_head needs an embedding made by the megatron factory",
              "a layer factory ties only its own embeddings");
  return std::make_shared<TiedHead>(std::move(e));
}
at::Tensor vocab_token_loss_sum(const at::Tensor& logits, const at::Tensor& targets, Communicator* tp) {
  return VocabCrossEntropy::apply(logits, targets, tp);
}
at::Tensor gather_vocab(const at::Tensor& logits, Communicator* tp) {
  at::NoGradGuard no_grad;
  return GatherFromTp::apply(logits, tp);
}

}  // namespace plait::megatron
