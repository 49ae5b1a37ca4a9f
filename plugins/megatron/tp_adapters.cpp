#include "tp_adapters.hpp"

#include <set>

#include <ATen/ATen.h>

#include "plait/sdk/error.hpp"

namespace plait::megatron {
namespace {

// One split linear with its adapter (or none) registered beside its weight and bias.
class AdaptedPart final : public WrappingLayer {
 public:
  AdaptedPart(std::shared_ptr<Layer> base, std::shared_ptr<Layer> adapter, Split split, const TpPlace& tp)
      : WrappingLayer(std::move(base)), adapter_(std::move(adapter)), split_(split), tp_(tp) {
    for (const auto& p : inner_->named_parameters(/*recurse=*/false)) (p.key() == "weight" ? weight_ : bias_) = p.value();
    if (!adapter_) return;
    for (const auto& child : adapter_->named_children()) register_module(child.key(), child.value());
    for (const auto& p : adapter_->named_parameters(/*recurse=*/false)) {
      own_.insert(p.key());
      register_parameter(p.key(), p.value(), p.value().requires_grad());
    }
  }
  // This rank's product of its input (whole for a column split, its columns for a row
  // split) with the adapter's added; the bias too when `bias`.
  at::Tensor product(const at::Tensor& x, bool bias) const {
    at::Tensor y = at::linear(x, weight_, bias ? bias_ : at::Tensor());
    return adapter_ ? y + adapter_->forward(x) : y;
  }
  at::Tensor forward(const at::Tensor& x) override {
    if (split_ == Split::column) return product(column_input(x, tp_), true);
    const at::Tensor y = row_output(product(x, false), tp_);
    return bias_.defined() ? y + bias_ : y;
  }
  TensorSplit split_of(const std::string& name) const override {
    return own_.count(name) != 0 ? adapter_->split_of(name) : inner_->split_of(name);
  }

 private:
  std::shared_ptr<Layer> adapter_;
  Split split_;
  TpPlace tp_;
  at::Tensor weight_, bias_;
  std::set<std::string> own_;
};

// Column-parallel linears reading one input (q|k|v, gate|up): made whole once.
class AdaptedColumns final : public Layer {
 public:
  AdaptedColumns(const std::vector<LinearSpec>& specs, std::vector<std::shared_ptr<AdaptedPart>> parts, const TpPlace& tp)
      : tp_(tp) {
    for (std::size_t i = 0; i < parts.size(); ++i) parts_.push_back(register_module(specs[i].child_name(), parts[i]));
  }
  at::Tensor forward(const at::Tensor& x) override {
    const at::Tensor whole = column_input(x, tp_);
    std::vector<at::Tensor> outs;
    for (const auto& part : parts_) outs.push_back(part->product(whole, true));
    return at::cat(outs, -1);
  }

 private:
  TpPlace tp_;
  std::vector<std::shared_ptr<AdaptedPart>> parts_;
};

}  // namespace

std::shared_ptr<Layer> adapted_linears(const std::vector<LinearSpec>& parts, const InitSpec& init,
                                       const AdapterMaker& adapter, const TpPlace& tp) {
  std::vector<std::shared_ptr<AdaptedPart>> made;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const LinearSpec& spec = parts[i];
    PLAIT_CHECK(spec.split != Split::none && !spec.output_head && (parts.size() == 1 || spec.split == Split::column),
                concat("megatron: an adapter targets ", spec.name,
                       ", which megatron does not split by columns or rows (an output head or a replicated linear)"),
                concat("leave ", spec.child_name(), " out of the adapter's targets"));
    auto base = spec.split == Split::column ? column_linear(spec, init, tp) : row_linear(spec, init, tp);
    made.push_back(std::make_shared<AdaptedPart>(std::move(base), adapter(i, spec.split, tp.rank, tp.ways), spec.split, tp));
  }
  if (made.size() == 1) return made.front();
  return std::make_shared<AdaptedColumns>(parts, std::move(made), tp);
}

}  // namespace plait::megatron
