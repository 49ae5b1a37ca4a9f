// The planner's matrix products against the published accounting: for every row of
// Megatron-LM's 2021 Table 1 (tests/data), a global batch's products with full
// recomputation add up to the paper's own FLOP count F = 96·B·s·l·h²·(1 + s/6h + V/16lh);
// tensor parallel splits them without remainder; a product's time is its FLOPs at the
// hardware's peak and its efficiency for the product's smallest dimension.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "plait/sdk/error.hpp"
#include "plan/step_gemms.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;

namespace {

struct Row {
  double params_billion;
  int64_t heads, hidden, layers, tp, pp, gpus, global_batch;
};

std::vector<Row> table1() {
  std::ifstream in(source_path("tests/data/megatron-2021-table1.csv"));
  std::vector<Row> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.rfind("params", 0) == 0) continue;
    std::replace(line.begin(), line.end(), ',', ' ');
    std::istringstream fields(line);
    Row r{};
    fields >> r.params_billion >> r.heads >> r.hidden >> r.layers >> r.tp >> r.pp >> r.gpus >> r.global_batch;
    rows.push_back(r);
  }
  return rows;
}

GemmQuery paper_model(const Row& r, int64_t tp) {
  GemmQuery q;
  q.model.family = "gpt2";
  q.model.n_layer = r.layers;
  q.model.n_head = q.model.n_kv_head = r.heads;
  q.model.n_embd = r.hidden;
  q.model.ffn_hidden = 4 * r.hidden;
  q.model.vocab_size = 51200;
  q.seq_len = 2048;
  q.micro_batch = 1;
  q.tp = tp;
  return q;
}

}  // namespace

TEST_CASE("a global batch's products with full recomputation are Megatron's F, for every row of its Table 1", "[plan]") {
  const std::vector<Row> rows = table1();
  REQUIRE(rows.size() == 10);
  for (const Row& r : rows) {
    const double B = static_cast<double>(r.global_batch), s = 2048, l = static_cast<double>(r.layers),
                 h = static_cast<double>(r.hidden), V = 51200;
    const double paper = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
    const double ours = B * microbatch_flops(paper_model(r, 1), r.layers, true, "full");
    INFO(r.params_billion << "B: planner " << ours << ", paper " << paper);
    CHECK(std::abs(ours - paper) <= 1e-12 * paper);
    // Each of the row's tp ranks does a tp-th of it.
    const double per_rank = microbatch_flops(paper_model(r, r.tp), r.layers, true, "full");
    CHECK(std::abs(per_rank * static_cast<double>(r.tp) * B - paper) <= 1e-12 * paper);
  }
}

TEST_CASE("recomputation adds a forward: full the block's, selective the attention core's", "[plan]") {
  GemmQuery q = paper_model(table1().front(), 1);
  const double none = microbatch_flops(q, 1, false, "none"), full = microbatch_flops(q, 1, false, "full"),
               selective = microbatch_flops(q, 1, false, "selective");
  CHECK(full == Approx(none * 4.0 / 3.0));
  // The core's two products per head: 2 * 2 * s^2 * h per sample.
  CHECK(selective - none == Approx(4.0 * 2048.0 * 2048.0 * 2304.0));
  CHECK_THROWS_WITH(microbatch_flops(q, 1, false, "some"), Contains("activation checkpointing 'some' is not one of"));
}

TEST_CASE("a product's time is its FLOPs at the peak times the efficiency for its smallest dimension", "[plan]") {
  const Hardware a100 = load_hardware("a100-80g");
  const Gemm square{"square", 4096, 4096, 4096};  // a100-80g.toml: 0.80 at 4096
  CHECK(gemm_seconds(a100, square) == Approx(2.0 * 4096 * 4096 * 4096 / (312e12 * 0.80)));
  const Gemm skinny{"skinny", 8192, 8192, 1024};  // the smallest dimension decides: 0.55
  CHECK(gemm_seconds(a100, skinny) == Approx(2.0 * 8192 * 8192 * 1024 / (312e12 * 0.55)));
}
