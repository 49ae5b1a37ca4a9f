#include "plan/meta_kernels.hpp"

#include <optional>
#include <tuple>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <torch/library.h>

namespace plait {
namespace {

at::Tensor like(const at::Tensor& t) { return at::empty_like(t); }
at::Tensor bool_like(const at::Tensor& t) { return at::empty_like(t, t.options().dtype(at::kBool)); }

std::vector<int64_t> broadcast(const at::Tensor& a, const at::Tensor& b) { return at::infer_size(a.sizes(), b.sizes()); }

at::Tensor index_select(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  if (self.dim() == 0) return like(self);
  std::vector<int64_t> sizes = self.sizes().vec();
  sizes[static_cast<std::size_t>(at::maybe_wrap_dim(dim, self.dim()))] = index.numel();
  return at::empty(sizes, self.options());
}

at::Tensor embedding_dense_backward(const at::Tensor& grad_output, const at::Tensor&, c10::SymInt num_weights,
                                    c10::SymInt, bool) {
  return at::empty({num_weights.expect_int(), grad_output.size(-1)}, grad_output.options());
}

// Its composite kernel would run a batch norm, which has no meta kernel either. The
// mean and reciprocal deviation keep the input's leading dimensions and dtype.
std::tuple<at::Tensor, at::Tensor, at::Tensor> native_layer_norm(const at::Tensor& input,
                                                                 c10::SymIntArrayRef normalized_shape,
                                                                 const std::optional<at::Tensor>&,
                                                                 const std::optional<at::Tensor>&, double) {
  std::vector<int64_t> stats = input.sizes().vec();
  for (std::size_t i = stats.size() - normalized_shape.size(); i < stats.size(); ++i) stats[i] = 1;
  return {like(input), at::empty(stats, input.options()), at::empty(stats, input.options())};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_layer_norm_backward(
    const at::Tensor&, const at::Tensor& input, c10::SymIntArrayRef, const at::Tensor&, const at::Tensor&,
    const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias, std::array<bool, 3> mask) {
  return {mask[0] ? like(input) : at::Tensor(), mask[1] && weight && weight->defined() ? like(*weight) : at::Tensor(),
          mask[2] && bias && bias->defined() ? like(*bias) : at::Tensor()};
}

std::tuple<at::Tensor, at::Tensor> fused_rms_norm_backward(const at::Tensor&, const at::Tensor& input,
                                                           at::IntArrayRef, const at::Tensor&,
                                                           const std::optional<at::Tensor>& weight,
                                                           std::array<bool, 2> mask) {
  return {mask[0] ? like(input) : at::Tensor(), mask[1] && weight && weight->defined() ? like(*weight) : at::Tensor()};
}

// CPU flash attention: output [B, H, L, Ev] as the query's dtype, logsumexp [B, H, L] float.
std::tuple<at::Tensor, at::Tensor> flash_attention_cpu(const at::Tensor& q, const at::Tensor&, const at::Tensor& v,
                                                       double, bool, const std::optional<at::Tensor>&,
                                                       std::optional<double>) {
  at::Tensor out = at::empty({q.size(0), q.size(1), q.size(2), v.size(-1)}, q.options());
  at::Tensor lse = at::empty({q.size(0), q.size(1), q.size(2)}, q.options().dtype(at::kFloat));
  return {out, lse};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> flash_attention_cpu_backward(
    const at::Tensor&, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor&,
    const at::Tensor&, double, bool, const std::optional<at::Tensor>&, std::optional<double>) {
  return {like(q), like(k), like(v)};
}

std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double, std::optional<bool>) {
  return {like(input), bool_like(input)};
}

at::Tensor native_dropout_backward(const at::Tensor& grad_output, const at::Tensor&, double) { return like(grad_output); }

at::Tensor where(const at::Tensor& condition, const at::Tensor& self, const at::Tensor& other) {
  return at::empty(at::infer_size(broadcast(condition, self), other.sizes()),
                   self.options().dtype(at::result_type(self, other)));
}

at::Tensor& where_out(const at::Tensor& condition, const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  out.resize_(at::infer_size(broadcast(condition, self), other.sizes()));
  return out;
}

at::Tensor& logical_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  out.resize_(broadcast(self, other));
  return out;
}

at::Tensor& unary_logical_out(const at::Tensor& self, at::Tensor& out) {
  out.resize_(self.sizes());
  return out;
}

at::Tensor isnan(const at::Tensor& self) { return bool_like(self); }

// A copy to or from the meta device moves nothing: an offload plugin's host copies of
// shapes keep what their memory held (the step's values are not the measurement).
at::Tensor& copy(at::Tensor& self, const at::Tensor&, bool) { return self; }

// A value read from a shape (a plugin's item()) is zero, as the host reader answers.
at::Scalar local_scalar(const at::Tensor& self) {
  return at::isFloatingType(self.scalar_type()) ? at::Scalar(0.0)
         : self.scalar_type() == at::kBool     ? at::Scalar(false)
                                               : at::Scalar(int64_t{0});
}

at::Tensor max_all(const at::Tensor& self) { return at::empty({}, self.options()); }

}  // namespace

void register_meta_kernels() {
  // Registered on first use, not at load: only the planner's measured rank needs them.
  static const torch::Library* kernels = [] {
    auto* m = new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::Meta, __FILE__, __LINE__);
    m->impl("index_select", TORCH_FN(index_select));
    m->impl("embedding_dense_backward", TORCH_FN(embedding_dense_backward));
    m->impl("native_layer_norm", TORCH_FN(native_layer_norm));
    m->impl("native_layer_norm_backward", TORCH_FN(native_layer_norm_backward));
    m->impl("_fused_rms_norm_backward", TORCH_FN(fused_rms_norm_backward));
    m->impl("_scaled_dot_product_flash_attention_for_cpu", TORCH_FN(flash_attention_cpu));
    m->impl("_scaled_dot_product_flash_attention_for_cpu_backward", TORCH_FN(flash_attention_cpu_backward));
    m->impl("native_dropout", TORCH_FN(native_dropout));
    m->impl("native_dropout_backward", TORCH_FN(native_dropout_backward));
    m->impl("where.self", TORCH_FN(where));
    m->impl("where.self_out", TORCH_FN(where_out));
    m->impl("max", TORCH_FN(max_all));
    m->impl("logical_or.out", TORCH_FN(logical_out));
    m->impl("logical_and.out", TORCH_FN(logical_out));
    m->impl("logical_not.out", TORCH_FN(unary_logical_out));
    m->impl("isnan", TORCH_FN(isnan));
    m->impl("copy_", TORCH_FN(copy));
    m->impl("_local_scalar_dense", TORCH_FN(local_scalar));
    return m;
  }();
  (void)kernels;
}

}  // namespace plait
