#include "model/attention_core.hpp"

#include <cmath>
#include <atomic>
#include <limits>
#include <optional>
#include <string>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include "plait/sdk/error.hpp"
#include "model/document_layout.hpp"
#include "model/precision.hpp"
#include "log/logging.hpp"

namespace plait {
namespace {

// Packed rows through flash attention's variable-length kernel, where it runs (CUDA, half
// or bf16, a head size that is a multiple of 8 up to 256): each document attends causally
// to itself, with no [B, 1, T, T] mask, which would rule out the fused kernels SDPA picks
// for unpacked rows. [B, H, T, D] in and out; the kernel reads the B x T tokens row after
// row with the documents' offsets (DocumentLayout::starts).
std::optional<at::Tensor> variable_length_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                                    const DocumentLayout& documents) {
  const int64_t D = q.size(-1);
  const bool half = q.scalar_type() == at::kBFloat16 || q.scalar_type() == at::kHalf;
  static std::atomic<bool> usable{true};  // false once this GPU's build refused the kernel
  if (!documents.starts.defined() || !q.is_cuda() || !half || D % 8 != 0 || D > 256 || !usable) return std::nullopt;
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2);
  const auto tokens = [&](const at::Tensor& t) { return t.transpose(1, 2).reshape({B * T, t.size(1), D}); };
  try {
    const at::Tensor out = std::get<0>(at::_flash_attention_forward(
        tokens(q), tokens(k), tokens(v), documents.starts, documents.starts, documents.longest, documents.longest,
        /*dropout_p=*/0.0, /*is_causal=*/true, /*return_debug_mask=*/false));
    return out.view({B, T, H, D}).transpose(1, 2);
  } catch (const std::exception& e) {  // a GPU the wheel's flash kernels were not built for
    if (usable.exchange(false)) {
      const std::string what = e.what();
      core_log().warn("packed documents: flash attention's variable-length kernel is not usable here (",
                      what.substr(0, what.find('\n')), "); attention takes the block mask instead");
    }
    return std::nullopt;
  }
}

// `documents`: packed rows' layout (document_layout.hpp), or null for causal attention
// over the whole row.
at::Tensor causal_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool math,
                            const DocumentLayout* documents) {
  if (!math) {
    if (documents != nullptr) {
      if (auto out = variable_length_attention(q, k, v, *documents)) return *out;
      return at::scaled_dot_product_attention(q, k, v, documents->additive(q.scalar_type()), 0.0, /*is_causal=*/false);
    }
    return at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true);
  }
  const int64_t T = q.size(-2);
  at::Tensor scores = at::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  const at::Tensor hidden = documents != nullptr ? documents->hidden()
                                                 : at::ones({T, T}, q.options().dtype(at::kBool)).triu(1);
  scores = scores.masked_fill(hidden, -std::numeric_limits<double>::infinity());
  return at::matmul(at::softmax(scores, -1), v);
}

}  // namespace

std::string sdpa_kernel(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  switch (at::_fused_sdp_choice(q, k, v, {}, 0.0, /*is_causal=*/true)) {  // sdp::SDPBackend's numbering
    case 0: return "math";
    case 1: return "flash";
    case 2: return "memory-efficient";
    case 3: return "cudnn";
    case 4: return "overrideable";
    default: return "none (no kernel accepts these inputs)";
  }
}

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Forward without keeping the core's intermediates; backward computes them again.
struct RecomputeCore : public torch::autograd::Function<RecomputeCore> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            bool math) {
    const AutocastState autocast = AutocastState::of(q.device().type());
    ctx->saved_data["math"] = math;
    // Backward may run on autograd's device thread, outside the forward's DocumentScope.
    const DocumentLayout* documents = current_document_layout();
    save_layout(ctx->saved_data, documents);
    ctx->saved_data["autocast"] = autocast.enabled;
    ctx->saved_data["autocast_dtype"] = autocast.dtype;
    ctx->save_for_backward({q, k, v});
    return causal_attention(q, k, v, math, documents);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    variable_list in = ctx->get_saved_variables();
    for (auto& t : in) t = t.detach().requires_grad_(true);
    const AutocastState autocast{ctx->saved_data["autocast"].toBool(), ctx->saved_data["autocast_dtype"].toScalarType()};
    at::Tensor y = under_autocast(autocast, in[0].device().type(), [&] {
      at::AutoGradMode grad_on(true);
      const std::optional<DocumentLayout> documents = saved_layout(ctx->saved_data);
      return causal_attention(in[0], in[1], in[2], ctx->saved_data["math"].toBool(), documents ? &*documents : nullptr);
    });
    variable_list g = torch::autograd::grad({y}, in, {grads[0]});
    return {g[0], g[1], g[2], at::Tensor()};
  }
};

}  // namespace

AttentionCore::AttentionCore(std::string kernel) : math_(kernel == "math") {
  PLAIT_CHECK(kernel == "math" || kernel == "sdpa", concat("unknown attention kernel '", kernel, "'"),
              "[model] attention is \"sdpa\" or \"math\"");
}

at::Tensor AttentionCore::forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  if (recompute_ && at::GradMode::is_enabled() && (q.requires_grad() || k.requires_grad() || v.requires_grad())) {
    return RecomputeCore::apply(q, k, v, math_);
  }
  return causal_attention(q, k, v, math_, current_document_layout());
}

}  // namespace plait
