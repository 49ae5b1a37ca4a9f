// fsdp: full and hybrid sharding train the single process's model (the equivalence
// harness on 2 and 4 ranks, float64 and float32, with gradient accumulation and
// clipping), and full sharding moves 3Ψ(N-1)/N elements per rank and step.
#include <catch2/catch.hpp>

#include "plait/sdk/error.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;

namespace {

constexpr double kPsi = 120576;  // gpt2 tiny's parameters (`plait models`)

void expect_equivalent(int ranks, const std::string& dtype, std::vector<std::string> sets = {}) {
  TempDir dir;
  sets.insert(sets.begin(), "parallel.data=fsdp");
  expect_check_passed(dir, quickstart_check(dir, ranks, dtype, 2, sets), dtype);
}

}  // namespace

TEST_CASE("fsdp on 2 ranks, float64, equals the single process", "[fsdp]") { expect_equivalent(2, "float64"); }
TEST_CASE("fsdp on 2 ranks, float32, equals the single process", "[fsdp]") { expect_equivalent(2, "float32"); }
TEST_CASE("fsdp on 4 ranks, float64, equals the single process", "[fsdp]") { expect_equivalent(4, "float64"); }
TEST_CASE("fsdp on 4 ranks, float32, equals the single process", "[fsdp]") { expect_equivalent(4, "float32"); }
TEST_CASE("hybrid fsdp (2 shard groups of 2) on 4 ranks, float64, equals the single process", "[fsdp]") {
  expect_equivalent(4, "float64", {"fsdp.shard_size=2"});
}
TEST_CASE("hybrid fsdp (2 shard groups of 2) on 4 ranks, float32, equals the single process", "[fsdp]") {
  expect_equivalent(4, "float32", {"fsdp.shard_size=2"});
}
TEST_CASE("hybrid fsdp (2 replicas of 1) on 2 ranks, float64, equals the single process", "[fsdp]") {
  expect_equivalent(2, "float64", {"fsdp.shard_size=1"});
}
TEST_CASE("hybrid fsdp (2 replicas of 1) on 2 ranks, float32, equals the single process", "[fsdp]") {
  expect_equivalent(2, "float32", {"fsdp.shard_size=1"});
}
TEST_CASE("fsdp without resharding after forward or prefetch equals the single process", "[fsdp]") {
  expect_equivalent(2, "float64", {"fsdp.reshard_after_forward=false", "fsdp.backward_prefetch=false",
                                   "fsdp.forward_prefetch=0"});
}

TEST_CASE("fsdp moves 3Ψ(n-1)/n elements per rank and step, and 2Ψ(n-1)/n without resharding", "[fsdp]") {
  for (int n : {2, 4}) {
    for (bool reshard : {true, false}) {
      TempDir dir;
      ProcessResult r = run_plait({"run", source_path("configs/quickstart.toml"), "--steps", "2", "--out",
                                   (dir / "run").string(), "--set", "parallel.data=fsdp", "--set",
                                   concat("parallel.dp=", n), "--set", concat("fsdp.reshard_after_forward=", reshard ? "true" : "false")});
      INFO(r.output);
      REQUIRE(r.exit_code == 0);
      const double expected = (reshard ? 3.0 : 2.0) * kPsi * (n - 1) / n * 4.0;  // float32 bytes
      for (const auto& m : read_metrics(dir / "run")) {
        const double fsdp = m.at("comm_bytes_by").at("fsdp").get<double>();
        INFO("n=" << n << " reshard " << reshard << " step " << m.at("step") << ": " << fsdp << " vs " << expected
                  << "; " << m.at("comm").dump());
        CHECK(std::abs(fsdp - expected) / expected < 0.01);
      }
    }
  }
}

TEST_CASE("a shard_size that does not divide the data-parallel degree is refused, naming both", "[fsdp]") {
  TempDir dir;
  ProcessResult r = run_plait({"run", source_path("configs/quickstart.toml"), "--steps", "1", "--out",
                               (dir / "run").string(), "--set", "parallel.data=fsdp", "--set", "parallel.dp=4",
                               "--set", "fsdp.shard_size=3"});
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Catch::Matchers::Contains("shard_size 3 does not divide the data-parallel degree 4"));
}

TEST_CASE("fsdp trains in bf16 with fp32 master weights close to the single-process bf16 run", "[fsdp]") {
  TempDir dir;
  ProcessResult r = run_plait({"check", source_path("configs/quickstart.toml"), "--steps", "3", "--out",
                               (dir / "check").string(), "--tolerance", "0.05", "--set", "parallel.data=fsdp", "--set",
                               "train.dtype=bfloat16", "--set", "train.grad_accum=2"});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Matchers::Contains("PASS"));
}

TEST_CASE("fsdp on llama (untied head, grouped-query attention) on 4 ranks, float64, equals the single process", "[fsdp]") {
  TempDir dir;
  ProcessResult r = quickstart_check(dir, 4, "float64", 2, {"parallel.data=fsdp", "model.family=llama"});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Matchers::Contains("PASS") &&
                           Catch::Matchers::Contains("gradients after step 1: 21 parameters"));
}
