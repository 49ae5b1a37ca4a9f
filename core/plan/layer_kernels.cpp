#include "plan/layer_kernels.hpp"

#include "plait/sdk/error.hpp"

namespace plait {
namespace {

// Bytes per element as plait's layers move them under autocast (train.dtype = "bfloat16"):
// the residual stream and the norms in float32 (4), the products' outputs in bf16 (2).
// A cast reads one and writes the other (6); an elementwise backward reads the gradient
// and what it saved and writes a gradient.
std::vector<MemoryKernel> norm_kernels(const std::string& which, bool rms) {
  if (rms) {  // plait's RMSNorm: pow, mean, the scaling and the weight, each a pass in float32
    return {{which, Extent::hidden, 28, 56}, {which + " cast", Extent::hidden, 6, 6}};
  }
  return {{which, Extent::hidden, 8, 12}, {which + " cast", Extent::hidden, 6, 6}};
}

std::vector<MemoryKernel> attention_kernels(const RankShape& s, bool llama) {
  std::vector<MemoryKernel> k;
  if (llama) {
    // The rotation of q and k: two products, a negated half, a cat, a sum (bf16).
    k.push_back({"rope q", Extent::split_hidden, 20, 20});
    k.push_back({"rope k", Extent::split_kv, 20, 20});
    if (s.model.n_kv_head != s.model.n_head) k.push_back({"repeat kv", Extent::split_hidden, 8, 8});
  }
  if (s.model.attention == "math") {
    // Scores scaled and masked in bf16, softmax in float32 (autocast's casts in and out).
    k.push_back({"scale", Extent::scores, 4, 4, true});
    k.push_back({"causal mask", Extent::scores, 4, 4, true});
    k.push_back({"softmax", Extent::scores, 20, 24, true});
  }
  k.push_back({"merge heads", Extent::split_hidden, 4, 4});  // the output's transpose, made contiguous
  return k;
}

std::vector<MemoryKernel> residual_kernels(const RankShape& s, const std::string& which) {
  std::vector<MemoryKernel> k;
  if (s.model.dropout > 0) k.push_back({which + " dropout", Extent::hidden, 5, 5});  // bf16 in and out, a mask byte
  k.push_back({which + " residual add", Extent::hidden, 10, 6});  // float32 stream plus a bf16 output
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
  KernelInventory inv;
  inv.name = concat("plait eager (autocast bf16, ", s.model.attention, " attention)");
  append(inv.block, norm_kernels("norm 1", llama));
  append(inv.block, attention_kernels(s, llama));
  append(inv.block, residual_kernels(s, "attention"));
  append(inv.block, norm_kernels("norm 2", llama));
  if (llama) {
    inv.block.push_back({"silu", Extent::ffn, 4, 6});
    inv.block.push_back({"gate * up", Extent::ffn, 6, 12});
  } else {
    inv.block.push_back({"gelu", Extent::ffn, 4, 6});
  }
  append(inv.block, residual_kernels(s, "mlp"));
  // Autocast's bf16 copies of the weights, made once per forward; their gradients cast
  // back and added into the float32 ones.
  inv.block.push_back({"weight casts", Extent::params, 6, 12});
  append(inv.head, norm_kernels("final norm", llama));
  inv.head.push_back({"log_softmax", Extent::logits, 14, 18});  // float32, with autocast's casts
  inv.head.push_back({"weight casts", Extent::params, 6, 12});
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
  double per_block = 0;
  for (const MemoryKernel& k : kernels.block) {
    const bool again = s.checkpointing == "full" || (s.checkpointing == "selective" && k.attention_core);
    per_block += extent_elements(s, k.extent, false) * (k.forward_bytes * (again ? 2 : 1) + k.backward_bytes);
  }
  double moved = static_cast<double>(blocks) * per_block;
  // The head is never recomputed: checkpointing covers the blocks.
  if (with_head) {
    for (const MemoryKernel& k : kernels.head) {
      moved += extent_elements(s, k.extent, true) * (k.forward_bytes + k.backward_bytes);
    }
  }
  return moved / (hw.memory_gbps * 1e9 * hw.memory_efficiency);
}

}  // namespace plait
