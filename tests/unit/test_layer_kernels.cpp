// The memory-bound kernels of the planner's time model: plait's math attention moves its
// score matrix through memory and the fused kernel does not; recomputation repeats the
// forwards it repeats (full: a block's; selective: the attention core's), never the head's.
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
