// A loss or gradient norm that is not finite: the run stops at that step on every rank
// with one message (the step, the rank that saw it first, the last finite loss), its
// status file says so, and no weights are touched; or, with on_nonfinite = "skip", the
// step is skipped, counted, and the run stops after too many in a row.
#include <catch2/catch.hpp>

#include <regex>

#include <ATen/ATen.h>

#include "io/safetensors.hpp"
#include "plait/sdk/error.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = 0; (at = text.find(what, at)) != std::string::npos; at += what.size()) ++n;
  return n;
}

nlohmann::json status_of(const fs::path& run) { return nlohmann::json::parse(read_file(run / "status.json")); }

// What a user must never see: a third party's exception text instead of plait's sentence.
void expect_no_internal_text(const std::string& output) {
  CHECK_THAT(output, !Contains("json.exception") && !Contains("c10::") && !Contains("Exception raised from") &&
                         !Contains("terminate called"));
  CHECK_FALSE(std::regex_search(output, std::regex(R"(\.(cpp|hpp|h):[0-9]+)")));
}

}  // namespace

TEST_CASE("a run that diverges stops at that step with one message, and its status says failed", "[nonfinite]") {
  TempDir dir;
  const auto out = dir / "run";
  // lr 1e4 blows the tiny model's weights up within a step or two.
  const ProcessResult r = run_plait({"run", source_path("configs/gpt2-tiny-single.toml"), "--steps", "50", "--out",
                                     out.string(), "--set", "train.lr=1e4", "--set", "train.warmup_steps=0"});
  INFO(r.output);
  CHECK(r.exit_code == 1);
  std::smatch m;
  const bool said = std::regex_search(
      r.output, m,
      std::regex(R"(error: step ([0-9]+): the (loss is (nan|inf|-inf)|gradient norm is (nan|inf) \(the loss, [^)]+, is finite\)); )"
                 R"(rank 0 saw it first; the last finite loss was [0-9.e+-]+ at step ([0-9]+)\n)"));
  REQUIRE(said);
  const int step = std::stoi(m[1]);
  CHECK(std::stoi(m[5]) == step - 1);
  CHECK_THAT(r.output, Contains("hint: lower [train] lr (10000, --set train.lr=1e4)"));
  CHECK(count(r.output, "error: ") == 1);
  expect_no_internal_text(r.output);
  // The status file says how it ended, at which step, with the same sentence.
  const nlohmann::json status = status_of(out);
  CHECK(status.at("state") == "failed");
  CHECK(status.at("step") == step);
  CHECK(status.at("reason").get<std::string>() == m.str(0).substr(7, m.str(0).size() - 8));
  // metrics.jsonl stays valid JSON: the failed step's record has no number for what was not finite.
  const auto metrics = read_metrics(out);
  REQUIRE(metrics.size() == static_cast<std::size_t>(step));
  CHECK(metrics.back().at("skipped") == true);
  CHECK((metrics.back().at("loss").is_null() || metrics.back().at("grad_norm").is_null()));
}

TEST_CASE("a non-finite loss on one rank stops every rank, naming that rank, in one message", "[nonfinite]") {
  TempDir dir;
  const auto out = dir / "run";
  const ProcessResult r = run_quickstart(out, 6, {"debug.faults=[\"nonfinite rank=1 step=3\"]"});
  INFO(r.output);
  CHECK(r.exit_code == 1);
  const std::string said = "step 3: the loss is nan; rank 1 saw it first; the last finite loss was ";
  CHECK_THAT(r.output, Contains("error: " + said));
  CHECK(count(r.output, "error: ") == 1);  // the ranks' own error lines stay in their logs
  CHECK_THAT(r.output, Contains("reported by rank "));
  expect_no_internal_text(r.output);
  for (int rank = 0; rank < 2; ++rank) CHECK_THAT(read_file(out / concat("rank-", rank, ".log")), Contains("error: " + said));
  const nlohmann::json status = status_of(out);
  CHECK(status.at("state") == "failed");
  CHECK(status.at("step") == 3);
  CHECK_THAT(status.at("reason").get<std::string>(), Contains(said));
  CHECK(read_metrics(out).size() == 3);
}

TEST_CASE("on_nonfinite = skip withholds the step: the weights are those of the step before", "[nonfinite]") {
  TempDir dir;
  const auto two = dir / "two", skipped = dir / "skipped";
  REQUIRE(run_quickstart(two, 2, {"checkpoint.save_final=true", "train.dtype=float64"}).exit_code == 0);
  const ProcessResult r = run_quickstart(skipped, 3, {"checkpoint.save_final=true", "train.dtype=float64",
                                                      "train.on_nonfinite=skip", "debug.nonfinite_step=3",
                                                      "debug.nonfinite_rank=0"});  // the older spelling
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("[debug] nonfinite_step is the fault \"nonfinite rank=0 step=3\": write it in [debug] faults"));
  CHECK_THAT(r.output, Contains("warning: step 3: the loss is nan; rank 0 saw it first") &&
                           Contains("the step was skipped (1 so far)"));
  const auto metrics = read_metrics(skipped);
  REQUIRE(metrics.size() == 3);
  CHECK(metrics[1].at("skipped") == false);
  CHECK(metrics[2].at("skipped") == true);
  CHECK(metrics[2].at("skipped_steps") == 1);
  CHECK(status_of(skipped).at("state") == "finished");
  // The schedule's lr differs (3 steps, not 2), but a withheld step updates nothing.
  const auto a = load_safetensors((two / "final.safetensors").string());
  const auto b = load_safetensors((skipped / "final.safetensors").string());
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].first);
    CHECK(a[i].first == b[i].first);
    CHECK(at::equal(a[i].second, b[i].second));
  }
}

TEST_CASE("on_nonfinite = skip stops after nonfinite_skip_limit skipped steps in a row", "[nonfinite]") {
  TempDir dir;
  const auto out = dir / "run";
  const ProcessResult r = run_plait({"run", source_path("configs/gpt2-tiny-single.toml"), "--steps", "50", "--out",
                                     out.string(), "--set", "train.lr=1e4", "--set", "train.warmup_steps=0", "--set",
                                     "train.on_nonfinite=skip", "--set", "train.nonfinite_skip_limit=3"});
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("; that is 3 skipped steps in a row, the limit ([train] nonfinite_skip_limit = 3, "
                                "--set train.nonfinite_skip_limit=3)"));
  CHECK(count(r.output, "the step was skipped") == 2);  // the third is the stop
  expect_no_internal_text(r.output);
  const auto metrics = read_metrics(out);
  REQUIRE(metrics.size() >= 3);
  CHECK(metrics.back().at("skipped_steps") == 3);
  CHECK(status_of(out).at("state") == "failed");
}
