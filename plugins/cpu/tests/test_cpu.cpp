// cpu offload: with the optimizer state, master weights and gradient shards in host
// memory (and stage-3 parameters too), zero and fsdp still train the single process's
// model; the host/device split of model-state bytes is the expected one; and under a
// device memory budget a model ddp cannot hold trains with zero stage 3 + offload.
#include <catch2/catch.hpp>

#include "plait/sdk/error.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;

namespace {

constexpr double kPsi = 120576;  // gpt2 tiny's parameters (`plait models`)

void expect_equivalent(int ranks, const std::string& dtype, std::vector<std::string> sets) {
  TempDir dir;
  sets.push_back("parallel.offload=cpu");
  expect_check_passed(dir, quickstart_check(dir, ranks, dtype, 2, sets), dtype);
}

void expect_near(const nlohmann::json& m, const char* key, double expected) {
  const double got = m.at(key).get<double>();
  INFO(key << ": " << got << " expected " << expected);
  if (expected == 0) {
    CHECK(got == 0);
  } else {
    CHECK(std::abs(got - expected) / expected < 0.02);
  }
}

}  // namespace

#define OFFLOAD_EQUIVALENCE(name, sets)                                                                                \
  TEST_CASE(name " with cpu offload on 2 ranks, float64, equals the single process", "[cpu]") {                       \
    expect_equivalent(2, "float64", sets);                                                                              \
  }                                                                                                                     \
  TEST_CASE(name " with cpu offload on 2 ranks, float32, equals the single process", "[cpu]") {                       \
    expect_equivalent(2, "float32", sets);                                                                              \
  }                                                                                                                     \
  TEST_CASE(name " with cpu offload on 4 ranks, float64, equals the single process", "[cpu]") {                       \
    expect_equivalent(4, "float64", sets);                                                                              \
  }                                                                                                                     \
  TEST_CASE(name " with cpu offload on 4 ranks, float32, equals the single process", "[cpu]") {                       \
    expect_equivalent(4, "float32", sets);                                                                              \
  }

OFFLOAD_EQUIVALENCE("zero stage 1", (std::vector<std::string>{"parallel.data=zero", "zero.stage=1"}))
OFFLOAD_EQUIVALENCE("zero stage 2", (std::vector<std::string>{"parallel.data=zero", "zero.stage=2"}))
OFFLOAD_EQUIVALENCE("zero stage 3 (parameters offloaded too)",
                    (std::vector<std::string>{"parallel.data=zero", "zero.stage=3", "cpu.params=true"}))
OFFLOAD_EQUIVALENCE("fsdp", (std::vector<std::string>{"parallel.data=fsdp"}))
OFFLOAD_EQUIVALENCE("hybrid fsdp", (std::vector<std::string>{"parallel.data=fsdp", "fsdp.shard_size=1"}))

TEST_CASE("with cpu offload the optimizer state, master weights and gradient shards are host bytes", "[cpu]") {
  const int n = 2;
  for (const std::string dtype : {"float32", "bfloat16"}) {
    for (int stage : {1, 2, 3}) {
      for (bool params : {false, true}) {
        if (params && stage != 3) continue;
        TempDir dir;
        ProcessResult r = run_plait({"run", source_path("configs/quickstart.toml"), "--steps", "1", "--out",
                                     (dir / "run").string(), "--set", "parallel.data=zero", "--set",
                                     concat("zero.stage=", stage), "--set", "parallel.offload=cpu", "--set",
                                     concat("cpu.params=", params ? "true" : "false"), "--set", concat("train.dtype=", dtype)});
        INFO(r.output);
        REQUIRE(r.exit_code == 0);
        const auto m = read_metrics(dir / "run").front();
        INFO(dtype << " stage " << stage << " params offloaded " << params << ": " << m.dump());
        const double w = dtype == "bfloat16" ? 2 : 4;
        const double working = stage < 3 ? w * kPsi : w * kPsi / n;
        expect_near(m, "param_bytes", params ? 0 : working);
        expect_near(m, "host_param_bytes", params ? working : 0);
        expect_near(m, "grad_bytes", stage == 1 ? w * kPsi : 0);  // stage 1 accumulates whole gradients
        expect_near(m, "host_grad_bytes", 4 * kPsi / n);           // the fp32 shard the host update reads
        expect_near(m, "optimizer_bytes", 0);
        expect_near(m, "host_optimizer_bytes", 12 * kPsi / n);     // fp32 master + two moments
        CHECK(m.at("peak_host_mem_bytes").get<double>() >= 16 * kPsi / n);
      }
    }
  }
}

TEST_CASE("a model over the device memory budget fails cleanly under ddp and trains under zero-3 with offload", "[cpu]") {
  // About 3.2M parameters: whole model state (16 bytes each) is ~49 MiB per rank, past
  // the 40 MiB budget; sharded over 2 ranks with the state offloaded, the device holds
  // only gathered groups and activations.
  const std::vector<std::string> model = {"--set", "model.n_layer=4", "--set", "model.n_embd=256", "--set",
                                          "data.micro_batch_size=2", "--set", "data.seq_len=32", "--set",
                                          "train.memory_limit_mb=40", "--steps", "3"};
  auto run = [&](const TempDir& dir, std::vector<std::string> extra) {
    std::vector<std::string> args = {"run", source_path("configs/quickstart.toml"), "--out", (dir / "run").string()};
    args.insert(args.end(), model.begin(), model.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return run_plait(args);
  };
  {
    TempDir dir;
    ProcessResult r = run(dir, {"--set", "parallel.data=ddp"});
    INFO(r.output);
    CHECK(r.exit_code != 0);
    // Refused before launch: the state alone is past the budget (core/memory/state_budget).
    CHECK_THAT(r.output, Contains("train.memory_limit_mb") && Contains("zero.stage = 3"));
    CHECK_FALSE(fs::exists(dir / "run"));
  }
  {
    TempDir dir;
    ProcessResult r = run(dir, {"--set", "parallel.data=zero", "--set", "zero.stage=3", "--set",
                                "parallel.offload=cpu", "--set", "cpu.params=true"});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const auto metrics = read_metrics(dir / "run");
    REQUIRE(metrics.size() == 3);
    for (const auto& m : metrics) CHECK(m.at("peak_mem_bytes").get<double>() <= 40.0 * 1024 * 1024);
    CHECK(metrics.back().at("loss").get<double>() < metrics.front().at("loss").get<double>());
  }
}

TEST_CASE("offloading parameters below stage 3 is refused, naming the stage", "[cpu]") {
  TempDir dir;
  ProcessResult r = run_plait({"run", source_path("configs/quickstart.toml"), "--steps", "1", "--out",
                               (dir / "run").string(), "--set", "parallel.data=zero", "--set", "zero.stage=2", "--set",
                               "parallel.offload=cpu", "--set", "cpu.params=true"});
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains("parameters can be offloaded only when they are sharded (stage 3); this is stage 2"));
}

TEST_CASE("an offload plugin with a data plugin that cannot use it is refused before launch", "[cpu]") {
  TempDir dir;
  ProcessResult r = run_plait({"run", source_path("configs/quickstart.toml"), "--steps", "1", "--out",
                               (dir / "run").string(), "--set", "parallel.offload=cpu"});
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains("data plugin 'ddp' cannot be combined with offload plugin 'cpu'"));
}
