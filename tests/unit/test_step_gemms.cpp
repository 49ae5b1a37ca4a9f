// The planner's matrix products against the published accounting: for every row of
// Megatron-LM's 2021 Table 1 (tests/data), a global batch's products with full
// recomputation add up to the paper's own FLOP count F = 96·B·s·l·h²·(1 + s/6h + V/16lh);
// tensor parallel splits them without remainder; a product's time is its FLOPs at the
// hardware's peak and its efficiency for the product's smallest dimension.
#include <algorithm>
#include <cmath>
#include <vector>

#include <catch2/catch.hpp>

#include "plait/sdk/error.hpp"
#include "plan/step_gemms.hpp"
#include "support/megatron_table.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;


TEST_CASE("a global batch's products with full recomputation are Megatron's F, for every row of its Table 1", "[plan]") {
  const std::vector<MegatronRow> rows = megatron_table1();
  REQUIRE(rows.size() == 10);
  for (const MegatronRow& r : rows) {
    const double B = static_cast<double>(r.global_batch), paper = r.paper_flops();
    const double ours = B * microbatch_flops(megatron_rank_shape(r, 1), r.layers, true);
    INFO(r.params_billion << "B: planner " << ours << ", paper " << paper);
    CHECK(std::abs(ours - paper) <= 1e-12 * paper);
    // Each of the row's tp ranks does a tp-th of it.
    const double per_rank = microbatch_flops(megatron_rank_shape(r, r.tp), r.layers, true);
    CHECK(std::abs(per_rank * static_cast<double>(r.tp) * B - paper) <= 1e-12 * paper);
  }
}

TEST_CASE("recomputation adds a forward: full the block's, selective the attention core's", "[plan]") {
  const MegatronRow r = megatron_table1().front();
  const double none = microbatch_flops(megatron_rank_shape(r, 1, "none"), 1, false),
               full = microbatch_flops(megatron_rank_shape(r, 1, "full"), 1, false),
               selective = microbatch_flops(megatron_rank_shape(r, 1, "selective"), 1, false);
  CHECK(full == Approx(none * 4.0 / 3.0));
  // The core's two products per head: 2 * 2 * s^2 * h per sample.
  CHECK(selective - none == Approx(4.0 * 2048.0 * 2048.0 * 2304.0));
  CHECK_THROWS_WITH(microbatch_flops(megatron_rank_shape(r, 1, "some"), 1, false), Contains("activation checkpointing 'some' is not one of"));
}

TEST_CASE("a product's time is its FLOPs at the peak times the efficiency for its smallest dimension", "[plan]") {
  const Hardware a100 = load_hardware("a100-80g");
  const Gemm square{"square", 4096, 4096, 4096};  // a100-80g.toml: 0.80 at 4096
  CHECK(gemm_seconds(a100, square) == Approx(2.0 * 4096 * 4096 * 4096 / (312e12 * 0.80)));
  const Gemm skinny{"skinny", 8192, 8192, 1024};  // the smallest dimension decides: 0.55
  CHECK(gemm_seconds(a100, skinny) == Approx(2.0 * 8192 * 8192 * 1024 / (312e12 * 0.55)));
}

TEST_CASE("the attention core's products run at the fused kernel's measured efficiency, where the machine has one", "[plan]") {
  Hardware a100 = load_hardware("a100-80g");
  RankShape q = megatron_rank_shape(megatron_table1().front(), 1, "none", 1);
  q.model.attention = "sdpa";
  const std::vector<Gemm> block = block_forward_gemms(q);
  const auto scores = std::find_if(block.begin(), block.end(), [](const Gemm& g) { return g.name == "scores"; });
  REQUIRE(scores != block.end());
  CHECK(scores->attention);
  const double by_size = gemm_seconds(a100, *scores);
  a100.attention_efficiency = 0.25;
  CHECK(gemm_seconds(a100, *scores) == Approx(scores->flops() / (312e12 * 0.25)));
  CHECK(gemm_seconds(a100, *scores) != Approx(by_size));
  // The projections keep the efficiency by size; plait's math attention is two plain products.
  const Gemm& qkv = block.front();
  const double smallest = static_cast<double>(std::min({qkv.m, qkv.n, qkv.k}));
  CHECK(gemm_seconds(a100, qkv) == Approx(qkv.flops() / (312e12 * a100.gemm_efficiency_at(smallest))));
  q.model.attention = "math";
  for (const Gemm& g : block_forward_gemms(q)) CHECK_FALSE(g.attention);
}
