// Megatron-LM tensor parallel (Shoeybi et al. 2019) as a layer factory: the model zoo
// asks for each linear with its split (column or row) and gets this rank's slice of it,
// so attention heads and MLP hidden units are divided over the tp ranks while the model
// code stays the same. With vocab_parallel the token embedding and the output head are
// split along the vocabulary and the cross-entropy runs on the slices; norms and
// position embeddings are replicated. With sequence_parallel the activations between
// the split layers (norms, residuals) hold 1/t of the positions each.
#include "plait/sdk/sdk.hpp"
#include "plait_options.hpp"
#include "plait_schema.hpp"
#include "tp_adapters.hpp"
#include "tp_layers.hpp"

namespace {

using plait::megatron::TpPlace;

class MegatronFactory final : public plait::LayerFactory, public plait::AdapterHost {
 public:
  explicit MegatronFactory(TpPlace tp) : tp_(tp) {}
  void* find_extension(std::string_view id) override { return plait::offer<plait::AdapterHost>(this, id); }
  std::shared_ptr<plait::Layer> adapted_linears(const std::vector<plait::LinearSpec>& parts, const plait::InitSpec& init,
                                                const plait::AdapterMaker& adapter) override {
    return plait::megatron::adapted_linears(parts, init, adapter, tp_);
  }
  std::shared_ptr<plait::Layer> linear(const plait::LinearSpec& spec, const plait::InitSpec& init) override {
    switch (spec.split) {
      case plait::Split::column: return plait::megatron::column_linear(spec, init, tp_);
      case plait::Split::row: return plait::megatron::row_linear(spec, init, tp_);
      case plait::Split::none: break;
    }
    return plait::megatron::replicated_linear(spec, init, tp_);
  }
  std::shared_ptr<plait::Layer> fused_linear(const std::vector<plait::LinearSpec>& parts,
                                            const plait::InitSpec& init) override {
    bool columns = true;
    for (const auto& spec : parts) columns = columns && spec.split == plait::Split::column && !spec.output_head;
    return columns ? plait::megatron::column_group(parts, init, tp_) : LayerFactory::fused_linear(parts, init);
  }
  std::shared_ptr<plait::Layer> norm(const plait::NormSpec& spec, const plait::InitSpec& init) override {
    auto layer = LayerFactory::norm(spec, init);
    return splits_sequence() ? plait::megatron::on_sequence_part(std::move(layer), tp_) : layer;
  }
  std::shared_ptr<plait::Layer> blocks_entry() override {
    return splits_sequence() ? plait::megatron::sequence_entry(tp_) : LayerFactory::blocks_entry();
  }
  int64_t sequence_shards() const override { return splits_sequence() ? tp_.ways : 1; }
  int64_t sequence_shard() const override { return splits_sequence() ? tp_.rank : 0; }
  std::shared_ptr<plait::Layer> embedding(const plait::EmbeddingSpec& spec, const plait::InitSpec& init) override {
    return plait::megatron::embedding(spec, init, tp_);
  }
  std::shared_ptr<plait::Layer> tied_linear(const std::shared_ptr<plait::Layer>& embedding) override {
    return plait::megatron::tied_head(embedding, tp_);
  }
  int64_t shard_count() const override { return tp_.ways; }
  at::Tensor token_loss_sum(const at::Tensor& logits, const at::Tensor& targets) override {
    if (!slices_logits()) return LayerFactory::token_loss_sum(logits, targets);
    return plait::megatron::vocab_token_loss_sum(logits, targets, tp_.group);
  }
  at::Tensor whole_logits(const at::Tensor& logits) override {
    return slices_logits() ? plait::megatron::gather_vocab(logits, tp_.group) : logits;
  }

 private:
  bool slices_logits() const { return tp_.vocab_parallel && tp_.group != nullptr; }
  bool splits_sequence() const { return tp_.sequence_parallel && tp_.group != nullptr; }
  TpPlace tp_;
};

class Megatron final : public plait::TensorParallel {
 public:
  // The layers' own widths are checked when the core builds the model's shapes through
  // this factory before launch; what only a forward would find is checked here.
  void check(const plait::RunCheck& run) const override {
    const int64_t tp = run.parallel->get<int64_t>("tp"), positions = run.data->get<int64_t>("seq_len");
    PLAIT_CHECK(!plait_options::Options::from(options()).sequence_parallel || positions % tp == 0,
                plait::concat(run.data->where("seq_len"), ": megatron: sequence_parallel splits each sequence over the ",
                              tp, " tensor-parallel ranks, but a batch holds ", positions, " positions ([parallel] tp, ",
                              run.parallel->where("tp"), ")"),
                "set [data] seq_len to a multiple of parallel.tp, or [megatron] sequence_parallel = false");
  }

  std::shared_ptr<plait::LayerFactory> layer_factory(const plait::TensorParallelSetup& setup) override {
    TpPlace tp;
    tp.group = setup.tp_group;
    if (tp.group != nullptr) {
      tp.rank = tp.group->rank();
      tp.ways = tp.group->size();
    }
    const auto megatron = plait_options::Options::from(options());  // [megatron], typed from schema.toml
    tp.vocab_parallel = megatron.vocab_parallel;
    tp.sequence_parallel = megatron.sequence_parallel;
    log().info("megatron: ", tp.ways, " tensor-parallel ranks, this is ", tp.rank,
                             tp.vocab_parallel ? "; vocabulary split (vocab-parallel loss)" : "; vocabulary replicated",
                             tp.sequence_parallel ? "; sequence parallel" : "");
    return std::make_shared<MegatronFactory>(tp);
  }
};

}  // namespace

PLAIT_PLUGIN(Megatron, "megatron", "0.1.0", "adapters", plait_schema_toml,
             "Megatron tensor parallel: column/row-parallel attention and MLP linears (heads split)")
