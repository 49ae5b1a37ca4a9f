// What plait verify plans for a plugin, from its kind and capabilities, without running
// anything: a bf16 case for a plugin that claims bf16, loss-gap cases against ddp (and a
// longer resume) for an approximate one, the user's --set in every case, and the meshes its
// random combinations draw.
#include <algorithm>
#include <set>

#include <catch2/catch.hpp>

#include "equivalence/tolerance.hpp"
#include "verify/combinations.hpp"
#include "verify/verify_plan.hpp"

using namespace plait;
using namespace plait::verify;

namespace {

PluginRecord data_plugin(const std::string& name, std::vector<std::string> capabilities) {
  PluginRecord p;
  p.name = name;
  p.kind = "data";
  p.capabilities = std::move(capabilities);
  return p;
}

bool has(const std::vector<std::string>& sets, const std::string& one) {
  return std::find(sets.begin(), sets.end(), one) != sets.end();
}

std::vector<Case> of_kind(const std::vector<Case>& cases, CaseKind kind) {
  std::vector<Case> out;
  std::copy_if(cases.begin(), cases.end(), std::back_inserter(out), [&](const Case& c) { return c.kind == kind; });
  return out;
}

}  // namespace

TEST_CASE("a data plugin that claims bf16 gets a bfloat16 equivalence case with verify's tolerance, in the full run",
          "[verify]") {
  const auto claims = data_plugin("mine", {"multi_rank", "grad_accum", "float64", "bf16"});
  const auto cases = plan_cases(claims, false);
  const auto bf16 = std::find_if(cases.begin(), cases.end(), [](const Case& c) { return has(c.sets, "train.dtype=bfloat16"); });
  REQUIRE(bf16 != cases.end());
  CHECK(bf16->kind == CaseKind::equivalence);
  CHECK(bf16->tolerance == kBfloat16VerifyTolerance);
  CHECK(bf16->title == "dp 2, llama, bfloat16 with fp32 master weights (tolerance 0.05)");
  // Without the claim, bfloat16 is a refusal row instead.
  const auto without = plan_cases(data_plugin("mine", {"multi_rank", "grad_accum", "float64"}), false);
  for (const auto& c : without) {
    if (has(c.sets, "train.dtype=bfloat16")) CHECK(c.kind == CaseKind::refused);
  }
}

TEST_CASE("an approximate data plugin is compared with ddp on each mesh, resumes over 24 steps, and reshards within "
          "the loss gap", "[verify]") {
  const auto cases = plan_cases(data_plugin("local-sgd", {"multi_rank", "grad_accum", "float64", "checkpoint", "pipeline",
                                                          "approximate"}),
                                false, {"local-sgd.every=4"});
  CHECK(of_kind(cases, CaseKind::equivalence).empty());
  const auto gaps = of_kind(cases, CaseKind::loss_gap);
  REQUIRE(gaps.size() == 4);  // dp 2 gpt2, dp 2 llama, dp 4, dp 2 x pp 2
  for (const auto& c : gaps) {
    CHECK(c.sets.at(0) == "parallel.data=local-sgd");
    CHECK(c.sets.at(1) == "local-sgd.every=4");
    // The same case with ddp in its place and without its options.
    CHECK(c.other.back() == "parallel.data=ddp");
    CHECK_FALSE(has(c.other, "parallel.data=local-sgd"));
    CHECK_FALSE(has(c.other, "local-sgd.every=4"));
    CHECK(c.other.size() == c.sets.size() - 1);
  }
  CHECK(has(gaps.back().other, "parallel.pp=2"));
  const auto resume = of_kind(cases, CaseKind::resume);
  REQUIRE(resume.size() == 1);
  CHECK(resume[0].steps == 24);
  for (const auto& c : of_kind(cases, CaseKind::reshard)) CHECK(c.approximate);
  // Every run of the plugin carries the user's --set, right after choosing it.
  for (const auto& c : cases) {
    for (const auto* side : {&c.sets, &c.other}) {
      if (!side->empty() && side->front() == "parallel.data=local-sgd") CHECK(side->at(1) == "local-sgd.every=4");
    }
  }
}

TEST_CASE("an exact plugin's resume runs 4 steps and its reshard rows hold float64's tolerance", "[verify]") {
  const auto cases = plan_cases(data_plugin("mine", {"multi_rank", "grad_accum", "float64", "checkpoint"}), false);
  CHECK(of_kind(cases, CaseKind::loss_gap).empty());
  CHECK(of_kind(cases, CaseKind::resume).at(0).steps == 4);
  for (const auto& c : of_kind(cases, CaseKind::reshard)) CHECK_FALSE(c.approximate);
}

TEST_CASE("the combination sampler keeps a data plugin without multi_rank on one replica, and spreads one with it",
          "[verify]") {
  const PluginRecord single = data_plugin("single", {"grad_accum", "float64"});
  const PluginRecord ddp = data_plugin("ddp", {"grad_accum", "float64", "multi_rank"});
  CombinationSampler one(single, 7), many(ddp, 7);
  std::set<std::string> single_dp, ddp_dp;
  for (int i = 0; i < 40; ++i) {
    for (const auto& o : one.next()) if (o.rfind("parallel.dp=", 0) == 0) single_dp.insert(o);
    for (const auto& o : many.next()) if (o.rfind("parallel.dp=", 0) == 0) ddp_dp.insert(o);
  }
  CHECK(single_dp == std::set<std::string>{"parallel.dp=1"});
  CHECK(ddp_dp == std::set<std::string>{"parallel.dp=1", "parallel.dp=2", "parallel.dp=4"});
}
