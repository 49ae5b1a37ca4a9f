#include "plan/layer_kernels.hpp"

#include <algorithm>

#include "plait/sdk/error.hpp"

namespace plait {
namespace {

// Bytes per element as plait's layers move them: the residual stream and the norms in
// float32 (`stream`, 8 under float64), the products' outputs in the compute dtype
// (`product`: bf16 under autocast). Under autocast a cast reads one and writes the other;
// an elementwise backward reads the gradient and what it saved and writes a gradient.
struct Widths {
  double stream = 4, product = 4;
  bool autocast = false;
  explicit Widths(const RankShape& s)
      : stream(s.activation_bytes_per_element == 8 ? 8 : 4),
        product(static_cast<double>(s.activation_bytes_per_element)),
        autocast(s.activation_bytes_per_element == 2) {}  // plait's bf16 is autocast's
  double cast() const { return stream + product; }
};

std::vector<MemoryKernel> norm_kernels(const std::string& which, bool rms, const Widths& w) {
  std::vector<MemoryKernel> k;
  // plait's RMSNorm: pow, mean, the scaling and the weight, each a pass in float32.
  if (rms) k.push_back({which, Extent::hidden, 7 * w.stream, 14 * w.stream});
  else k.push_back({which, Extent::hidden, 2 * w.stream, 3 * w.stream});
  if (w.autocast) k.push_back({which + " cast", Extent::hidden, w.cast(), w.cast()});
  return k;
}

std::vector<MemoryKernel> attention_kernels(const RankShape& s, bool llama, const Widths& w) {
  std::vector<MemoryKernel> k;
  const double p = w.product;
  if (llama) {
    // The rotation of q and k: two products, a negated half, a cat, a sum.
    k.push_back({"rope q", Extent::split_hidden, 10 * p, 10 * p});
    k.push_back({"rope k", Extent::split_kv, 10 * p, 10 * p});
    if (s.model.n_kv_head != s.model.n_head) k.push_back({"repeat kv", Extent::split_hidden, 4 * p, 4 * p});
  }
  if (s.model.attention == "math") {
    // Scores scaled and masked in the products' dtype, softmax in float32 (under
    // autocast with its casts in and out).
    k.push_back({"scale", Extent::scores, 2 * p, 2 * p, true});
    k.push_back({"causal mask", Extent::scores, 2 * p, 2 * p, true});
    if (w.autocast) k.push_back({"softmax", Extent::scores, 20, 24, true});
    else k.push_back({"softmax", Extent::scores, 2 * p, 3 * p, true});
  }
  k.push_back({"merge heads", Extent::split_hidden, 2 * p, 2 * p});  // the output's transpose, made contiguous
  return k;
}

std::vector<MemoryKernel> residual_kernels(const RankShape& s, const std::string& which, const Widths& w) {
  std::vector<MemoryKernel> k;
  // In and out in the products' dtype, a mask byte.
  if (s.model.dropout > 0) k.push_back({which + " dropout", Extent::hidden, 2 * w.product + 1, 2 * w.product + 1});
  // The stream read and written, plus the product's output.
  k.push_back({which + " residual add", Extent::hidden, 2 * w.stream + w.product, w.stream + w.product});
  return k;
}

void append(std::vector<MemoryKernel>& to, const std::vector<MemoryKernel>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

double block_params(const ModelSpec& m) {
  const double h = static_cast<double>(m.n_embd), kv = static_cast<double>(m.n_kv_head * m.head_dim()),
               f = static_cast<double>(m.ffn_hidden);
  if (m.family == "llama") return h * (h + 2 * kv) + h * h + 3 * h * f;
  return 4 * h * h + 2 * h * f;
}

}  // namespace

KernelInventory plait_kernels(const RankShape& s) {
  PLAIT_CHECK(s.model.family == "gpt2" || s.model.family == "llama",
              concat("the kernel model knows gpt2 and llama blocks, not ", s.model.family), "");
  const bool llama = s.model.family == "llama";
  const Widths w(s);
  const double p = w.product;
  KernelInventory inv;
  inv.name = concat("plait eager (", w.autocast ? "autocast bf16" : "one dtype", ", ", s.model.attention, " attention)");
  append(inv.block, norm_kernels("norm 1", llama, w));
  append(inv.block, attention_kernels(s, llama, w));
  append(inv.block, residual_kernels(s, "attention", w));
  append(inv.block, norm_kernels("norm 2", llama, w));
  if (llama) {
    inv.block.push_back({"silu", Extent::ffn, 2 * p, 3 * p, false, true});
    inv.block.push_back({"gate * up", Extent::ffn, 3 * p, 6 * p});
  } else {
    inv.block.push_back({"gelu", Extent::ffn, 2 * p, 3 * p, false, true});
  }
  append(inv.block, residual_kernels(s, "mlp", w));
  append(inv.head, norm_kernels("final norm", llama, w));
  if (w.autocast) {
    // Autocast's bf16 copies of the weights, made once per forward; their gradients cast
    // back and added into the float32 ones.
    inv.block.push_back({"weight casts", Extent::params, 6, 12});
    inv.head.push_back({"log_softmax", Extent::logits, 14, 18});  // float32, with autocast's casts
    inv.head.push_back({"weight casts", Extent::params, 6, 12});
  } else {
    inv.head.push_back({"log_softmax", Extent::logits, 2 * p, 3 * p});
  }
  return inv;
}

double extent_elements(const RankShape& s, Extent extent, bool head) {
  const ModelSpec& m = s.model;
  const double n = static_cast<double>(s.tokens()), t = static_cast<double>(s.tp);
  switch (extent) {
    case Extent::hidden: return (s.sequence_parallel ? n / t : n) * static_cast<double>(m.n_embd);
    case Extent::split_hidden: return n * static_cast<double>(m.n_embd) / t;
    case Extent::split_kv: return n * static_cast<double>(m.n_kv_head * m.head_dim()) / t;
    case Extent::ffn: return n * static_cast<double>(m.ffn_hidden) / t;
    case Extent::scores: {
      const double seq = static_cast<double>(s.seq_len);
      return static_cast<double>(s.micro_batch) * static_cast<double>(m.n_head) / t * seq * seq;
    }
    case Extent::logits: return n * static_cast<double>(m.vocab_size) / t;
    case Extent::params: return (head ? static_cast<double>(m.vocab_size * m.n_embd) : block_params(m)) / t;
  }
  return 0;
}

double memory_bound_seconds(const Hardware& hw, const KernelInventory& kernels, const RankShape& s, int64_t blocks,
                            bool with_head) {
  check_checkpointing(s.checkpointing);
  const double bandwidth = hw.memory_gbps * 1e9 * hw.memory_efficiency;
  // A kernel's time: its bytes at the memory's bandwidth, or for the MLP's activation on a
  // machine that computes it slower (activation_gelems: forward and backward together,
  // the forward its bytes' share), its elements at that rate.
  auto kernel_seconds = [&](const MemoryKernel& k, bool head, bool again) {
    const double elements = extent_elements(s, k.extent, head);
    const double bytes = elements * (k.forward_bytes * (again ? 2 : 1) + k.backward_bytes);
    double t = bytes / bandwidth;
    if (k.activation && hw.activation_gelems) {
      const double forward_share = k.forward_bytes / (k.forward_bytes + k.backward_bytes);
      t = std::max(t, elements * (1 + (again ? forward_share : 0)) / (*hw.activation_gelems * 1e9));
    }
    return t;
  };
  double per_block = 0;
  for (const MemoryKernel& k : kernels.block) {
    per_block += kernel_seconds(k, false, s.checkpointing == "full" || (s.checkpointing == "selective" && k.attention_core));
  }
  double seconds = static_cast<double>(blocks) * per_block;
  // The head is never recomputed: checkpointing covers the blocks.
  if (with_head) {
    for (const MemoryKernel& k : kernels.head) seconds += kernel_seconds(k, true, false);
  }
  return seconds;
}

}  // namespace plait
