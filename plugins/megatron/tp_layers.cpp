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

// Every rank's x concatenated along `dim`.
at::Tensor all_gather_along(Communicator* tp, const at::Tensor& x, int64_t dim, const char* phase) {
  at::Tensor mine = x.contiguous().reshape({-1});
  at::Tensor all = at::empty({tp->size() * mine.numel()}, mine.options());
  CommOptions o;
  o.tag = {"megatron", phase, "", -1};
  tp->all_gather(all, mine, o)->wait();
  std::vector<int64_t> shape = {tp->size()};
  for (int64_t d : x.sizes()) shape.push_back(d);
  return at::cat(all.view(shape).unbind(0), dim);
}

// This rank's 1/t of x along dim 1 (the sequence of [B, T, C]), summed over the ranks.
at::Tensor reduce_scatter_sequence(Communicator* tp, const at::Tensor& x, const char* phase) {
  const int64_t t = tp->size(), part = x.size(1) / t;
  std::vector<int64_t> split = {x.size(0), t, part};
  for (int64_t d = 2; d < x.dim(); ++d) split.push_back(x.size(d));
  const at::Tensor by_rank = x.contiguous().view(split).transpose(0, 1).contiguous();  // [t, B, T/t, ...]
  std::vector<int64_t> out_shape = x.sizes().vec();
  out_shape[1] = part;
  at::Tensor out = at::empty({by_rank.numel() / t}, x.options());
  ReduceScatterOptions o;
  o.tag = {"megatron", phase, "", -1};
  tp->reduce_scatter(out, by_rank.view({-1}), o)->wait();
  return out.view(out_shape);
}

at::Tensor sequence_part(const at::Tensor& x, Communicator* tp) {
  const int64_t part = x.size(1) / tp->size();
  return x.narrow(1, tp->rank() * part, part).contiguous();
}

std::string phase_of(AutogradContext* ctx) { return ctx->saved_data["phase"].toStringRef(); }

// Megatron's f: identity forward; the gradient is summed over the tp ranks (each holds
// the part that flowed through its columns, or, under sequence parallel, through its
// positions).
struct CopyToTp : public torch::autograd::Function<CopyToTp> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, Communicator* tp, const char* phase) {
    ctx->saved_data["tp"] = reinterpret_cast<int64_t>(tp);
    ctx->saved_data["phase"] = std::string(phase);
    return x.view_as(x);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    at::Tensor g = grads[0].contiguous().clone();
    all_reduce(group_of(ctx), g, phase_of(ctx).c_str());
    return {g, at::Tensor(), at::Tensor()};
  }
};

// Sequence parallel (Korthikanti et al. 2022). Entering the blocks: each rank keeps its
// 1/t of the positions; the gradient of the whole sequence is gathered back.
struct SplitSequence : public torch::autograd::Function<SplitSequence> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, Communicator* tp) {
    ctx->saved_data["tp"] = reinterpret_cast<int64_t>(tp);
    return sequence_part(x, tp);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {all_gather_along(group_of(ctx), grads[0], 1, "sequence-entry-grad"), at::Tensor()};
  }
};

// The whole sequence from every rank's part, for a replicated layer: each rank computes
// the whole gradient, so backward keeps this rank's positions of it.
struct GatherSequence : public torch::autograd::Function<GatherSequence> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, Communicator* tp) {
    ctx->saved_data["tp"] = reinterpret_cast<int64_t>(tp);
    return all_gather_along(tp, x, 1, "sequence-gather");
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {sequence_part(grads[0], group_of(ctx)), at::Tensor()};
  }
};

// A row-parallel layer's partial sums, summed and split over the positions (Megatron's
// g-bar under sequence parallel); the gradient of each part is gathered back.
struct ReduceScatterToSequence : public torch::autograd::Function<ReduceScatterToSequence> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, Communicator* tp) {
    ctx->saved_data["tp"] = reinterpret_cast<int64_t>(tp);
    return reduce_scatter_sequence(tp, x, "row-output-scatter");
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {all_gather_along(group_of(ctx), grads[0], 1, "row-output-grad-gather"), at::Tensor()};
  }
};

// The whole sequence for a column product that keeps it (an adapted linear, whose
// adapter reads the same input): all-gathered forward; each rank's gradient of it is a
// partial sum (its columns' share), reduce-scattered back to the positions.
struct GatherForColumn : public torch::autograd::Function<GatherForColumn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, Communicator* tp) {
    ctx->saved_data["tp"] = reinterpret_cast<int64_t>(tp);
    return all_gather_along(tp, x, 1, "sequence-gather");
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {reduce_scatter_sequence(group_of(ctx), grads[0], "sequence-gather-grad"), at::Tensor()};
  }
};

// A column-parallel linear on this rank's positions (Megatron's linear with sequence
// parallel): the whole sequence is gathered for the product but not kept; backward
// gathers it again for the weight's gradient and reduce-scatters the input's gradient.
// Keeping only the part is what makes sequence parallel divide these activations by t.
// The products of one input with each weight (and bias: one per weight, or none),
// concatenated along the last dimension.
at::Tensor products(const at::Tensor& x, at::TensorList weights, at::TensorList biases) {
  std::vector<at::Tensor> out;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    out.push_back(at::linear(x, weights[i], biases.empty() ? at::Tensor() : biases[i]));
  }
  return out.size() == 1 ? out[0] : at::cat(out, -1);
}

struct SequenceColumnLinear : public torch::autograd::Function<SequenceColumnLinear> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& part, at::TensorList weights,
                            at::TensorList biases, Communicator* tp) {
    ctx->saved_data["tp"] = reinterpret_cast<int64_t>(tp);
    ctx->saved_data["biases"] = !biases.empty();
    std::vector<at::Tensor> saved = {part};
    saved.insert(saved.end(), weights.begin(), weights.end());
    ctx->save_for_backward(saved);
    return products(all_gather_along(tp, part, 1, "sequence-gather"), weights, biases);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    Communicator* tp = group_of(ctx);
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& part = saved[0];
    const at::Tensor gy = grads[0].contiguous();
    const auto type = gy.scalar_type();  // autocast may have run the product in a lower precision
    const at::Tensor whole = all_gather_along(tp, part, 1, "sequence-regather").to(type);
    const at::Tensor whole2 = whole.reshape({-1, whole.size(-1)});
    at::Tensor gx;
    std::vector<at::Tensor> gw, gb;
    int64_t column = 0;
    for (std::size_t i = 1; i < saved.size(); ++i) {
      const at::Tensor& weight = saved[i];
      const at::Tensor g = gy.narrow(-1, column, weight.size(0));
      column += weight.size(0);
      const at::Tensor gi = g.matmul(weight.to(type));
      gx = gx.defined() ? gx + gi : gi;
      const at::Tensor g2 = g.reshape({-1, g.size(-1)});
      gw.push_back(g2.t().mm(whole2).to(weight.scalar_type()));
      if (ctx->saved_data["biases"].toBool()) gb.push_back(g2.sum(0).to(weight.scalar_type()));
    }
    variable_list out = {reduce_scatter_sequence(tp, gx, "sequence-gather-grad").to(part.scalar_type())};
    out.insert(out.end(), gw.begin(), gw.end());
    out.insert(out.end(), gb.begin(), gb.end());
    out.emplace_back();  // tp
    return out;
  }
};

// A replicated parameter used on this rank's positions only has a partial gradient; the
// data plugin sums it over tp once per step (TensorSplit::partial_grad).
TensorSplit replicated_split(const TpPlace& tp) { return {-1, 1, tp.sequence_parallel && tp.group != nullptr}; }

// x W^T + b with this rank's columns: over the whole sequence gathered from every
// rank's positions under sequence parallel; else over x, whose gradient is summed over
// the ranks.
// Several weights (a fused group) read the input made whole once; their outputs are
// concatenated. `biases`: one per weight, or none.
at::Tensor column_product(const at::Tensor& x, at::TensorList weights, at::TensorList biases, const TpPlace& tp) {
  if (!tp.group) return products(x, weights, biases);
  if (tp.sequence_parallel) return SequenceColumnLinear::apply(x, weights, biases, tp.group);
  return products(CopyToTp::apply(x, tp.group, "column-input-grad"), weights, biases);
}

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
    return all_gather_along(tp, x, -1, "column-output-gather");
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
    at::Tensor y = column_product(x, weight_, bias_.defined() ? at::TensorList(bias_) : at::TensorList(), tp_);
    return gather_output_ && tp_.group ? GatherFromTp::apply(y, tp_.group) : y;
  }
  TensorSplit split_of(const std::string&) const override { return {0, parts_}; }
  const at::Tensor& weight() const { return weight_; }
  const at::Tensor& bias() const { return bias_; }

 private:
  TpPlace tp_;
  int64_t parts_;
  bool gather_output_;
  at::Tensor weight_, bias_;
};

// Column-parallel linears that read one input: the input is made whole (its gradient
// summed, or the sequence gathered) once for the group, then each part's product; the
// weights stay apart (no copy into one stacked matrix on every forward).
class ColumnGroup final : public Layer {
 public:
  ColumnGroup(const std::vector<LinearSpec>& specs, const InitSpec& init, const TpPlace& tp) : tp_(tp) {
    for (const auto& spec : specs) {
      PLAIT_CHECK(spec.bias == specs.front().bias,
                  concat("megatron: the fused linears ", specs.front().name, " and ", spec.name,
                         " differ in having a bias"),
                  "fuse linears that all have a bias or none");
      parts_.push_back(register_module(spec.child_name(),
                                       std::make_shared<ColumnLinear>(spec, init, tp)));
    }
  }
  at::Tensor forward(const at::Tensor& x) override {
    std::vector<at::Tensor> weights, biases;
    for (const auto& part : parts_) {
      weights.push_back(part->weight());
      if (part->bias().defined()) biases.push_back(part->bias());
    }
    return column_product(x, weights, biases, tp_);
  }

 private:
  TpPlace tp_;
  std::vector<std::shared_ptr<ColumnLinear>> parts_;
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
    const at::Tensor y = row_output(at::linear(x, weight_), tp_);
    return bias_.defined() ? y + bias_ : y;  // the bias is added once, after the sum
  }
  TensorSplit split_of(const std::string& name) const override {
    return name == "weight" ? TensorSplit{1, 1} : replicated_split(tp_);
  }

 private:
  TpPlace tp_;
  at::Tensor weight_, bias_;
};

// Replicated; position-wise, so under sequence parallel it runs on this rank's positions.
class Linear final : public Layer {
 public:
  Linear(const LinearSpec& spec, const InitSpec& init, const TpPlace& tp) : tp_(tp) {
    weight_ = register_parameter("weight", seeded_normal({spec.out_features, spec.in_features}, spec.init_std,
                                                         init.seed, spec.name + ".weight", init.options));
    if (spec.bias) bias_ = register_parameter("bias", filled({spec.out_features}, 0.0, init.options));
  }
  at::Tensor forward(const at::Tensor& x) override {
    return at::linear(x, weight_, bias_);
  }
  TensorSplit split_of(const std::string&) const override { return replicated_split(tp_); }

 private:
  TpPlace tp_;
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

// Replicated: under sequence parallel it reads the whole sequence (each rank's
// gradient of it is whole already).
class TiedHead final : public Layer {
 public:
  TiedHead(std::shared_ptr<Embedding> embedding, const TpPlace& tp) : embedding_(std::move(embedding)), tp_(tp) {}
  at::Tensor forward(const at::Tensor& x) override {
    const bool split = tp_.sequence_parallel && tp_.group;
    return at::linear(split ? GatherSequence::apply(x, tp_.group) : x, embedding_->weight());
  }

 private:
  std::shared_ptr<Embedding> embedding_;
  TpPlace tp_;
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
    return column_product(x, embedding_->weight(), {}, tp_);
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

// A replicated layer run on this rank's positions (a norm under sequence parallel): its
// parameters' gradients are partial over tp.
class OnSequencePart final : public WrappingLayer {
 public:
  OnSequencePart(std::shared_ptr<Layer> inner, const TpPlace& tp) : WrappingLayer(std::move(inner)), tp_(tp) {}
  at::Tensor forward(const at::Tensor& x) override { return inner_->forward(x); }
  TensorSplit split_of(const std::string&) const override { return replicated_split(tp_); }

 private:
  TpPlace tp_;
};

class SequenceEntry final : public Layer {
 public:
  explicit SequenceEntry(const TpPlace& tp) : tp_(tp) {}
  at::Tensor forward(const at::Tensor& x) override {
    PLAIT_CHECK(x.size(1) % tp_.ways == 0,
                concat("megatron: sequence_parallel splits each sequence over the ", tp_.ways,
                       " tensor-parallel ranks, but a batch holds ", x.size(1), " positions"),
                "set [data] seq_len to a multiple of parallel.tp, or [megatron] sequence_parallel = false");
    return SplitSequence::apply(x, tp_.group);
  }

 private:
  TpPlace tp_;
};

}  // namespace

at::Tensor column_input(const at::Tensor& x, const TpPlace& tp) {
  if (!tp.group) return x;
  return tp.sequence_parallel ? GatherForColumn::apply(x, tp.group) : CopyToTp::apply(x, tp.group, "column-input-grad");
}
at::Tensor row_output(const at::Tensor& partial, const TpPlace& tp) {
  if (!tp.group) return partial;
  return tp.sequence_parallel ? ReduceScatterToSequence::apply(partial, tp.group)
                              : ReduceFromTp::apply(partial, tp.group, "row-output");
}

std::shared_ptr<Layer> column_linear(const LinearSpec& spec, const InitSpec& init, const TpPlace& tp) {
  return std::make_shared<ColumnLinear>(spec, init, tp);
}
std::shared_ptr<Layer> column_group(const std::vector<LinearSpec>& specs, const InitSpec& init, const TpPlace& tp) {
  return std::make_shared<ColumnGroup>(specs, init, tp);
}
std::shared_ptr<Layer> row_linear(const LinearSpec& spec, const InitSpec& init, const TpPlace& tp) {
  return std::make_shared<RowLinear>(spec, init, tp);
}
std::shared_ptr<Layer> replicated_linear(const LinearSpec& spec, const InitSpec& init, const TpPlace& tp) {
  return std::make_shared<Linear>(spec, init, tp);
}
std::shared_ptr<Layer> on_sequence_part(std::shared_ptr<Layer> layer, const TpPlace& tp) {
  return std::make_shared<OnSequencePart>(std::move(layer), tp);
}
std::shared_ptr<Layer> sequence_entry(const TpPlace& tp) { return std::make_shared<SequenceEntry>(tp); }
std::shared_ptr<Layer> embedding(const EmbeddingSpec& spec, const InitSpec& init, const TpPlace& tp) {
  if (spec.vocab_split && tp.vocab_parallel && tp.group != nullptr) return std::make_shared<VocabEmbedding>(spec, init, tp);
  return std::make_shared<Embedding>(spec, init);
}
std::shared_ptr<Layer> tied_head(const std::shared_ptr<Layer>& embedding, const TpPlace& tp) {
  if (auto v = std::dynamic_pointer_cast<VocabEmbedding>(embedding)) return std::make_shared<VocabTiedHead>(std::move(v), tp);
  auto e = std::dynamic_pointer_cast<Embedding>(embedding);
  PLAIT_CHECK(e != nullptr, "megatron: tied_head needs an embedding made by the megatron factory",
              "a layer factory ties only its own embeddings");
  return std::make_shared<TiedHead>(std::move(e), tp);
}
at::Tensor vocab_token_loss_sum(const at::Tensor& logits, const at::Tensor& targets, Communicator* tp) {
  return VocabCrossEntropy::apply(logits, targets, tp);
}
at::Tensor gather_vocab(const at::Tensor& logits, Communicator* tp) {
  at::NoGradGuard no_grad;
  return GatherFromTp::apply(logits, tp);
}

}  // namespace plait::megatron
