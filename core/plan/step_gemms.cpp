#include "plan/step_gemms.hpp"

#include <algorithm>

#include "plait/sdk/error.hpp"

namespace plait {
namespace {

// The products' cost summed by `cost` (their FLOPs, or their seconds on a machine).
template <class Cost>
double total(const std::vector<Gemm>& gemms, Cost cost) {
  double sum = 0;
  for (const Gemm& g : gemms) sum += cost(g);
  return sum;
}

std::vector<Gemm> attention_core(const RankShape& q) {
  const ModelSpec& m = q.model;
  const int64_t heads = q.micro_batch * m.n_head / q.tp, s = q.seq_len, d = m.head_dim();
  const bool fused = m.attention != "math";  // sdpa: one kernel; math: two batched products
  return {{"scores", s, s, d, heads, fused}, {"context", s, d, s, heads, fused}};
}

// A microbatch's products on a rank: forward, backward (the input's gradient and the
// weight's, each a forward's worth; no weight gradient for a frozen weight) and the
// shape's recomputation, each costed by `cost`.
template <class Cost>
double microbatch_cost(const RankShape& q, int64_t blocks, bool with_head, Cost cost) {
  check_checkpointing(q.checkpointing);
  const std::vector<Gemm> gemms = block_forward_gemms(q);
  // The adapters' low-rank products (AdapterCostModel's FLOPs), at the efficiency of the
  // smallest product the machine file describes: their inner size is the rank.
  const Gemm adapters{"adapters", q.tokens(), 1, static_cast<int64_t>(q.frozen.adapter_flops / 2.0)};
  const double block = total(gemms, cost) + (adapters.k > 0 ? cost(adapters) : 0.0);
  const double frozen = total(gemms, [&](const Gemm& g) { return cost(g) * q.frozen.frozen_share(g.name); });
  double recompute = 0;
  if (q.checkpointing == "full") recompute = block;
  if (q.checkpointing == "selective") recompute = total(attention_core(q), cost);
  double sum = static_cast<double>(blocks) * (3 * block - frozen + recompute);
  if (with_head) sum += (q.frozen.head ? 2 : 3) * total(head_forward_gemms(q), cost);
  return sum;
}

}  // namespace

std::vector<Gemm> block_forward_gemms(const RankShape& q) {
  const ModelSpec& m = q.model;
  PLAIT_CHECK(q.tp >= 1 && m.n_head % q.tp == 0 && m.ffn_hidden % q.tp == 0,
              concat("tp ", q.tp, " does not split ", m.n_head, " heads and a hidden size of ", m.ffn_hidden), "");
  const int64_t n = q.tokens(), h = m.n_embd, t = q.tp, f = m.ffn_hidden;
  const int64_t kv = m.n_kv_head * m.head_dim();
  std::vector<Gemm> out;
  if (m.family == "llama") {
    out = {{"qkv", n, (h + 2 * kv) / t, h}, {"o_proj", n, h, h / t}, {"gate_up", n, 2 * f / t, h}, {"down", n, h, f / t}};
  } else {
    out = {{"c_attn", n, 3 * h / t, h}, {"attn.c_proj", n, h, h / t}, {"c_fc", n, f / t, h}, {"mlp.c_proj", n, h, f / t}};
  }
  for (Gemm& g : attention_core(q)) out.push_back(std::move(g));
  return out;
}

std::vector<Gemm> head_forward_gemms(const RankShape& q) {
  return {{"logits", q.tokens(), q.model.vocab_size / q.tp, q.model.n_embd}};
}

double microbatch_flops(const RankShape& q, int64_t blocks, bool with_head) {
  return microbatch_cost(q, blocks, with_head, [](const Gemm& g) { return g.flops(); });
}

double gemm_seconds(const Hardware& hw, const Gemm& g) {
  const double smallest = static_cast<double>(std::min({g.m, g.n, g.k}));
  const double efficiency =
      g.attention && hw.attention_efficiency ? *hw.attention_efficiency : hw.gemm_efficiency_at(smallest);
  return g.flops() / (hw.peak_bf16_tflops * 1e12 * efficiency);
}

double microbatch_gemm_seconds(const Hardware& hw, const RankShape& q, int64_t blocks, bool with_head) {
  return microbatch_cost(q, blocks, with_head, [&](const Gemm& g) { return gemm_seconds(hw, g); });
}

}  // namespace plait
