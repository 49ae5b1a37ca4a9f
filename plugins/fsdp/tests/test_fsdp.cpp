// fsdp: full and hybrid sharding train the single process's model (the equivalence
// harness on 2 and 4 ranks, float64 and float32, with gradient accumulation and
// clipping), and full sharding moves 3Ψ(N-1)/N elements per rank and step; without
// resharding its cost model counts what it keeps gathered.
#include <catch2/catch.hpp>

#include "plait/sdk/error.hpp"
#include "plan/config_prediction.hpp"
#include "plan/hardware.hpp"
#include "run/prepare.hpp"
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
      const auto records = read_metrics(dir / "run");
      REQUIRE(records.size() == 2);  // both steps checked, not none
      for (const auto& m : records) {
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

TEST_CASE("fsdp's cost model counts the gathered parameters it keeps from forward to backward without resharding",
          "[fsdp]") {
  // 8 blocks: kept, they outweigh the two groups the engine counts in use and prefetched.
  const std::vector<std::string> sets = {"parallel.data=fsdp", "fsdp.reshard_after_forward=false", "model.n_layer=8"};
  const PreparedRun run = prepare_run(source_path("configs/quickstart.toml"), sets);
  const ConfigPrediction kept = predict_config(run, load_hardware("a100-80g"));
  std::vector<std::string> resharding = sets;
  resharding[1] = "fsdp.reshard_after_forward=true";
  const ConfigPrediction freed =
      predict_config(prepare_run(source_path("configs/quickstart.toml"), resharding), load_hardware("a100-80g"));
  const RankMemory& rank = kept.ranks.at(0);
  // Every group whole at the backward's start: the shards' bytes times the 2 shards.
  CHECK(rank.transient >= 2 * rank.state.params);
  CHECK(rank.transient > freed.ranks.at(0).transient);
  // A real run's forward holds them at its end, with the activations: within the prediction.
  TempDir dir;
  const ProcessResult r = run_quickstart(dir / "run", 2, sets);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const std::vector<nlohmann::json> steps = read_metrics(dir / "run");
  REQUIRE(steps.back().at("ranks").size() == 2);
  for (const nlohmann::json& measured : steps.back().at("ranks")) {
    const auto held = measured.at("activation_bytes").get<double>();
    INFO("rank " << measured.at("rank") << ": held " << held << ", predicted activations " << rank.activations
                 << " and transient " << rank.transient);
    CHECK(held >= static_cast<double>(rank.activations + 2 * rank.state.params) * 0.995);
    CHECK(held <= static_cast<double>(rank.device() - rank.state.params - rank.state.grads - rank.state.optimizer) * 1.005);
  }
}
