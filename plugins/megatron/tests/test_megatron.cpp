// megatron: tensor parallel on 2 and 4 ranks trains the single process's model (the
// equivalence harness, float64 and float32, gradient accumulation and clipping, both
// model families), alone and under a data-parallel plugin (dp 2 x tp 2).
#include <catch2/catch.hpp>

#include "plait/sdk/error.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;

namespace {

// quickstart_check's `ranks` is the dp degree; tp comes on top.
void expect_equivalent(const std::string& family, int tp, const std::string& dtype, std::vector<std::string> sets = {}) {
  TempDir dir;
  sets.insert(sets.begin(), {"parallel.tensor=megatron", concat("parallel.tp=", tp), concat("model.family=", family)});
  const bool data_parallel = std::find(sets.begin(), sets.end(), "parallel.dp=2") != sets.end();
  if (!data_parallel) sets.push_back("parallel.data=none");
  ProcessResult r = quickstart_check(dir, data_parallel ? 2 : 1, dtype, 2, sets);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("PASS") &&
                           Contains(concat("gradients after step 1: ", family == "gpt2" ? 28 : 21, " parameters")));
}

}  // namespace

#define MEGATRON_EQUIVALENCE(family, tp, dtype)                                                                   \
  TEST_CASE("megatron tp " #tp " on " family ", " dtype ", equals the single process", "[megatron]") {            \
    expect_equivalent(family, tp, dtype);                                                                          \
  }
MEGATRON_EQUIVALENCE("gpt2", 2, "float64")
MEGATRON_EQUIVALENCE("gpt2", 2, "float32")
MEGATRON_EQUIVALENCE("gpt2", 4, "float64")
MEGATRON_EQUIVALENCE("gpt2", 4, "float32")
MEGATRON_EQUIVALENCE("llama", 2, "float64")
MEGATRON_EQUIVALENCE("llama", 2, "float32")

TEST_CASE("megatron tp 2 under ddp dp 2 equals the single process", "[megatron]") {
  expect_equivalent("gpt2", 2, "float64", {"parallel.dp=2", "parallel.data=ddp"});
}
TEST_CASE("megatron tp 2 under zero stage 1 dp 2 equals the single process", "[megatron]") {
  expect_equivalent("gpt2", 2, "float64", {"parallel.dp=2", "parallel.data=zero", "zero.stage=1"});
}
TEST_CASE("megatron tp 2 under fsdp dp 2 equals the single process", "[megatron]") {
  expect_equivalent("llama", 2, "float64", {"parallel.dp=2", "parallel.data=fsdp"});
}

TEST_CASE("a tp degree that does not divide the key/value heads is refused, naming the layer", "[megatron]") {
  TempDir dir;
  ProcessResult r = run_plait({"run", source_path("configs/quickstart.toml"), "--steps", "1", "--out",
                               (dir / "run").string(), "--set", "model.family=llama", "--set", "parallel.data=none",
                               "--set", "parallel.dp=1", "--set", "parallel.tensor=megatron", "--set", "parallel.tp=4"});
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains("model.layers.0.self_attn: 4 attention heads and 2 key/value heads must both split "
                                "evenly over 4 tensor-parallel ranks"));
}

// Megatron's count (Korthikanti et al. 2022, section 4.2.2): per block 2 all-reduces of
// b*s*h elements in forward (attention and MLP outputs) and 2 in backward (their
// inputs' gradients). gpt2's tied head is replicated and adds none; bus bytes are the
// ring's 2(t-1)/t of the payload.
TEST_CASE("megatron's tensor-parallel traffic per block equals Megatron's formula", "[megatron]") {
  for (int tp : {2, 4}) {
    TempDir dir;
    const int layers = 2, b = 8, s = 64, h = 64, m = 2;  // configs/quickstart.toml's gpt2 tiny
    ProcessResult r = run_plait({"run", source_path("configs/quickstart.toml"), "--steps", "2", "--out",
                                 (dir / "run").string(), "--set", "parallel.tensor=megatron", "--set",
                                 concat("parallel.tp=", tp), "--set", "parallel.dp=1", "--set", "parallel.data=none",
                                 "--set", concat("train.grad_accum=", m)});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const auto metrics = read_metrics(dir / "run");
    const double payload_per_block = 4.0 * b * s * h * sizeof(float) * m;
    const double expected = layers * payload_per_block * 2.0 * (tp - 1) / tp;
    for (const auto& step : metrics) {
      const double measured = step["comm_bytes_by"]["megatron"].get<double>();
      INFO("tp " << tp << " step " << step["step"] << ": " << measured / layers << " bus bytes per block, formula "
                 << expected / layers);
      CHECK(measured == Approx(expected).epsilon(0.01));
    }
  }
}
