// megatron: tensor parallel on 2 and 4 ranks trains the single process's model (the
// equivalence harness, float64 and float32, gradient accumulation and clipping, both
// model families, the vocabulary split by default and replicated on request), alone and
// under a data-parallel plugin (dp 2 x tp 2); its traffic is Megatron's formula.
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
// inputs' gradients). With the vocabulary split, the token embedding's partial vectors
// (b*s*h forward), the tied head's input gradient (b*s*h backward) and the loss's three
// numbers per token (max, sum of exponentials, target logit) come on top. Bus bytes are
// the ring's 2(t-1)/t of the payload.
TEST_CASE("megatron's tensor-parallel traffic per block equals Megatron's formula", "[megatron]") {
  for (const bool vocab_parallel : {false, true}) {
    for (int tp : {2, 4}) {
      TempDir dir;
      const double layers = 2, b = 8, s = 64, h = 64, m = 2;  // configs/quickstart.toml's gpt2 tiny
      ProcessResult r = run_plait({"run", source_path("configs/quickstart.toml"), "--steps", "2", "--out",
                                   (dir / "run").string(), "--set", "parallel.tensor=megatron", "--set",
                                   concat("parallel.tp=", tp), "--set", "parallel.dp=1", "--set",
                                   "parallel.data=none", "--set", concat("train.grad_accum=", m), "--set",
                                   concat("megatron.vocab_parallel=", vocab_parallel ? "true" : "false")});
      INFO(r.output);
      REQUIRE(r.exit_code == 0);
      const double bus = 2.0 * (tp - 1) / tp * sizeof(float) * m;
      const double per_block = 4 * b * s * h * bus;
      const double vocab = vocab_parallel ? (2 * b * s * h + 3 * b * s) * bus : 0.0;
      for (const auto& step : read_metrics(dir / "run")) {
        const double measured = step["comm_bytes_by"]["megatron"].get<double>();
        INFO("vocab_parallel " << vocab_parallel << ", tp " << tp << ", step " << step["step"] << ": "
                               << (measured - vocab) / layers << " bus bytes per block, formula " << per_block);
        CHECK(measured == Approx(layers * per_block + vocab).epsilon(0.01));
      }
    }
  }
}

TEST_CASE("megatron with the vocabulary replicated (gathered logits) equals the single process", "[megatron]") {
  expect_equivalent("gpt2", 2, "float64", {"megatron.vocab_parallel=false"});
  expect_equivalent("llama", 2, "float32", {"megatron.vocab_parallel=false"});
}

TEST_CASE("megatron refuses a vocabulary that does not split, naming the embedding", "[megatron]") {
  TempDir dir;
  ProcessResult r = run_plait({"run", source_path("configs/quickstart.toml"), "--steps", "1", "--out",
                               (dir / "run").string(), "--set", "parallel.data=none", "--set", "parallel.dp=1",
                               "--set", "parallel.tensor=megatron", "--set", "parallel.tp=2", "--set",
                               "model.vocab_size=255"});
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains("megatron: transformer.wte has 255 rows, which do not split over 2 tensor-parallel ranks") &&
                           Contains("vocab_parallel = false"));
}
