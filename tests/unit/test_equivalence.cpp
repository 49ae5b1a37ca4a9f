// The equivalence harness (`plait check`) judging DDP against the single-process run,
// and DDP's measured communication against 2Ψ(n-1)/n.
#include <catch2/catch.hpp>

#include <fstream>

#include <nlohmann/json.hpp>

#include "plait/sdk/error.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;

namespace {

void expect_pass(int ranks, const std::string& dtype, int accum) {
  TempDir dir;
  expect_check_passed(dir, quickstart_check(dir, ranks, dtype, accum, {"parallel.data=ddp"}), dtype);
}

}  // namespace

TEST_CASE("ddp on 2 ranks, float64, equals the single process", "[equivalence]") { expect_pass(2, "float64", 1); }
TEST_CASE("ddp on 2 ranks, float64, with gradient accumulation", "[equivalence]") { expect_pass(2, "float64", 2); }
TEST_CASE("ddp on 2 ranks, float32, equals the single process", "[equivalence]") { expect_pass(2, "float32", 1); }
TEST_CASE("ddp on 2 ranks, float32, with gradient accumulation", "[equivalence]") { expect_pass(2, "float32", 2); }
TEST_CASE("ddp on 4 ranks, float64, equals the single process", "[equivalence]") { expect_pass(4, "float64", 1); }
TEST_CASE("ddp on 4 ranks, float64, with gradient accumulation", "[equivalence]") { expect_pass(4, "float64", 2); }
TEST_CASE("ddp on 4 ranks, float32, equals the single process", "[equivalence]") { expect_pass(4, "float32", 1); }
TEST_CASE("ddp on 4 ranks, float32, with gradient accumulation", "[equivalence]") { expect_pass(4, "float32", 2); }

TEST_CASE("ddp without overlap and with one bucket per parameter still equals the single process", "[equivalence]") {
  TempDir dir;
  ProcessResult r = quickstart_check(dir, 2, "float64", 2, {"parallel.data=ddp", "ddp.overlap=false", "ddp.bucket_cap_mb=0"});
  INFO(r.output);
  CHECK(r.exit_code == 0);
}

TEST_CASE("the harness fails a strategy that does not synchronise gradients", "[equivalence]") {
  TempDir dir;
  ProcessResult r = run_plait({"check", source_path("configs/quickstart.toml"), "--steps", "3", "--out",
                               (dir / "check").string(), "--set", "parallel.data=fixture-nosync", "--set",
                               "train.dtype=float64"},
                              {{"PLAIT_PLUGIN_PATH", std::string(PLAIT_FIXTURE_DIR) + "/nosync"}});
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains("FAIL") && Contains("mismatch: gradient 'transformer.wte.weight' differs"));
}

TEST_CASE("ddp's measured communication per step is 2Ψ(n-1)/n elements per rank", "[equivalence]") {
  for (int n : {2, 4}) {
    TempDir dir;
    ProcessResult r = run_plait({"run", source_path("configs/quickstart.toml"), "--steps", "3", "--out",
                                 (dir / "run").string(), "--set", concat("parallel.dp=", n), "--set",
                                 "train.grad_accum=2", "--set", "ddp.bucket_cap_mb=0.05"});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const double psi = 120576;  // gpt2 tiny's parameters (`plait models`)
    const double expected = 2.0 * psi * (n - 1) / n * 4.0;  // float32 bytes
    std::ifstream in(dir / "run/metrics.jsonl");
    std::string line;
    int steps = 0;
    while (std::getline(in, line)) {
      auto m = nlohmann::json::parse(line);
      const double ddp = m.at("comm_bytes_by").at("ddp").get<double>();
      const double total = m.at("comm_bytes").get<double>();
      INFO("n=" << n << " step " << m.at("step") << ": ddp " << ddp << " total " << total << " expected " << expected);
      CHECK(std::abs(ddp - expected) / expected < 0.01);
      CHECK(std::abs(total - expected) / expected < 0.01);  // the core's token and loss sums are tiny
      ++steps;
    }
    CHECK(steps == 3);
  }
}
