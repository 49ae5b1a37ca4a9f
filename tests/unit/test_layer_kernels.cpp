// The memory-bound kernels of the planner's time model: plait's math attention moves its
// score matrix through memory and the fused kernel does not; recomputation repeats the
// forwards it repeats (full: a block's; selective: the attention core's), never the head's.
#include <algorithm>
#include <string>

#include <catch2/catch.hpp>

#include "plan/layer_kernels.hpp"
#include "support/megatron_table.hpp"

using namespace plait;
using namespace plait::test;

TEST_CASE("plait's math attention moves its score matrix through memory, the fused kernel does not", "[plan]") {
  const Hardware a100 = load_hardware("a100-80g");
  RankShape s = megatron_rank_shape(megatron_table1().front(), 1, "none", 1);
  s.model.dropout = 0;
  s.model.attention = "sdpa";
  const double fused = memory_bound_seconds(a100, plait_kernels(s), s, 1, false);
  s.model.attention = "math";
  const double math = memory_bound_seconds(a100, plait_kernels(s), s, 1, false);
  // Scale, mask and softmax: 28 bytes per score forward, 32 backward.
  const double scores = 24.0 * 2048 * 2048;
  CHECK(math - fused == Approx(scores * (28 + 32) / (2039e9 * 0.7)));
  CHECK(extent_elements(s, Extent::scores, false) == scores);
}

TEST_CASE("recomputation repeats the kernels' forward: full a block's, selective the attention core's", "[plan]") {
  const Hardware a100 = load_hardware("a100-80g");
  RankShape s = megatron_rank_shape(megatron_table1().front(), 1, "none", 1);
  const KernelInventory k = plait_kernels(s);
  double forward = 0, core_forward = 0;
  for (const MemoryKernel& m : k.block) {
    forward += extent_elements(s, m.extent, false) * m.forward_bytes;
    if (m.attention_core) core_forward += extent_elements(s, m.extent, false) * m.forward_bytes;
  }
  REQUIRE(core_forward > 0);
  const double bw = 2039e9 * 0.7;
  const double none = memory_bound_seconds(a100, k, s, 1, false);
  s.checkpointing = "full";
  CHECK(memory_bound_seconds(a100, k, s, 1, false) - none == Approx(forward / bw));
  s.checkpointing = "selective";
  CHECK(memory_bound_seconds(a100, k, s, 1, false) - none == Approx(core_forward / bw));
  // The head is never recomputed.
  const double head_none = memory_bound_seconds(a100, k, megatron_rank_shape(megatron_table1().front(), 1, "none"), 0, true);
  CHECK(memory_bound_seconds(a100, k, megatron_rank_shape(megatron_table1().front(), 1, "full"), 0, true) == head_none);
}

TEST_CASE("under float32 plait's layers cast nothing, and a machine slow at tanh pays the GELU by its elements", "[plan]") {
  Hardware a100 = load_hardware("a100-80g");
  RankShape s = megatron_rank_shape(megatron_table1().front(), 1, "none", 1);
  auto casts = [](const KernelInventory& k) {
    int n = 0;
    for (const MemoryKernel& m : k.block) n += m.name.find("cast") != std::string::npos;
    return n;
  };
  CHECK(casts(plait_kernels(s)) == 3);  // bf16: both norms' outputs and the weights
  s.activation_bytes_per_element = s.stat_bytes_per_element = 4;
  const KernelInventory fp32 = plait_kernels(s);
  CHECK(casts(fp32) == 0);
  const auto gelu = std::find_if(fp32.block.begin(), fp32.block.end(), [](const MemoryKernel& m) { return m.activation; });
  REQUIRE(gelu != fp32.block.end());
  CHECK(gelu->name == "gelu");
  const double elements = extent_elements(s, Extent::ffn, false);
  const double memory_bound = memory_bound_seconds(a100, fp32, s, 1, false);
  a100.activation_gelems = 0.25;  // a CPU core's tanh GELU, forward and backward
  const double slow = memory_bound_seconds(a100, fp32, s, 1, false);
  CHECK(slow - memory_bound ==
        Approx(elements / 0.25e9 - elements * (gelu->forward_bytes + gelu->backward_bytes) / (2039e9 * 0.7)));
  // Full recomputation repeats the forward: its bytes' share of the pair.
  s.checkpointing = "full";
  a100.activation_gelems.reset();
  const double again_fast = memory_bound_seconds(a100, fp32, s, 1, false);
  a100.activation_gelems = 0.25;
  const double share = gelu->forward_bytes / (gelu->forward_bytes + gelu->backward_bytes);
  CHECK(memory_bound_seconds(a100, fp32, s, 1, false) - again_fast ==
        Approx(elements * (1 + share) / 0.25e9 -
               elements * (2 * gelu->forward_bytes + gelu->backward_bytes) / (2039e9 * 0.7)));
}
