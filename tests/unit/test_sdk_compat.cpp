// The compatibility promise, shown with plugins built against the frozen headers of API
// 12.0 (tests/sdk/frozen): this plait, of a later minor version, loads them as they are,
// they train the single process's model, and what later minors added (12.1's
// ScheduleModel extension and device metrics, 12.3's DataCostModel) is simply absent for
// them.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "loader/host_abi.hpp"
#include "loader/plugin_registry.hpp"
#include "plan/data_cost.hpp"
#include "plait/sdk/error.hpp"
#include "plait/sdk/version.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;

namespace {

const std::map<std::string, std::string> kFrozenPath = {{"PLAIT_PLUGIN_PATH", PLAIT_FROZEN_12_0_DIR}};

std::vector<std::string> with_sets(std::vector<std::string> args, const std::vector<std::string>& sets) {
  for (const auto& s : sets) {
    args.push_back("--set");
    args.push_back(s);
  }
  return args;
}

}  // namespace

TEST_CASE("plugins built against the frozen API 12.0 headers load into this plait, a later minor", "[sdk]") {
  STATIC_REQUIRE(PLAIT_API_MAJOR == 12);
  STATIC_REQUIRE(PLAIT_API_MINOR > 0);  // the point: this plait is newer than the plugins
  const PluginRegistry r = PluginRegistry::discover({{PLAIT_FROZEN_12_0_DIR, "test"}}, host_abi());
  CHECK(r.refusals().empty());
  for (const std::string name : {"frozen-replicated", "frozen-gpipe"}) {
    const PluginRecord* p = r.find(name);
    REQUIRE(p != nullptr);
    CHECK(p->api_major == 12);
    CHECK(p->api_minor == 0);
    CHECK(p->available);
  }
  const ProcessResult listed = run_plait({"plugins"}, kFrozenPath);
  CHECK(listed.exit_code == 0);
  CHECK_THAT(listed.output, Contains("frozen-replicated 12.0.0 (API 12.0)") &&
                                Contains(concat("single 1.0.0 (API ", PLAIT_API_VERSION_STRING, ")")));
}

TEST_CASE("a frozen 12.0 data plugin and schedule pass plait check on dp 2 x pp 2 with accumulation", "[sdk]") {
  TempDir dir;
  const ProcessResult r = run_plait(
      with_sets({"check", source_path("configs/quickstart.toml"), "--steps", "3", "--out", (dir / "check").string()},
                {"parallel.data=frozen-replicated", "parallel.pipeline=frozen-gpipe", "parallel.dp=2", "parallel.pp=2",
                 "train.dtype=float64", "train.grad_accum=2", "train.grad_clip=0.5"}),
      kFrozenPath);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("PASS") && Contains("gradients after step 1: 28 parameters"));
  const auto report = nlohmann::json::parse(read_file(dir / "check/equivalence.json"));
  CHECK(report.at("passed").get<bool>());
  // The candidate really ran the frozen plugins: their own log lines are in its rank logs.
  CHECK_THAT(read_file(dir / "check/candidate/rank-0.log"), Contains("frozen-replicated (API 12.0)"));
}

TEST_CASE("plait schedule show: a schedule of 12.1 gives its idle-share formula, one of 12.0 is shown without", "[sdk]") {
  const std::vector<std::string> sets = {"parallel.pp=2", "parallel.pipeline=1f1b", "train.grad_accum=4"};
  const ProcessResult current =
      run_plait(with_sets({"schedule", "show", source_path("configs/quickstart.toml")}, sets), kFrozenPath);
  INFO(current.output);
  CHECK(current.exit_code == 0);
  CHECK_THAT(current.output, Contains("rank 0") && Contains("20.0%") &&  // (p-1)/(m+p-1) = 1/5
                                 Contains("formula: (p-1)/(m+p-1) with p 2, v 1, m 4"));
  const ProcessResult frozen = run_plait(
      with_sets({"schedule", "show", source_path("configs/quickstart.toml")}, {"parallel.pp=2", "train.grad_accum=4",
                                                                              "parallel.pipeline=frozen-gpipe"}),
      kFrozenPath);
  INFO(frozen.output);
  CHECK(frozen.exit_code == 0);
  CHECK_THAT(frozen.output, Contains("schedule frozen-gpipe") &&
                                Contains("formula: none; the schedule 'frozen-gpipe' gives no idle-share formula"));
}

TEST_CASE("the planner asks a data plugin of 12.3 for its cost model, and one of 12.0 has none and says so", "[sdk]") {
  ::setenv("PLAIT_PLUGIN_PATH", PLAIT_FROZEN_12_0_DIR, 1);
  const PreparedRun frozen = prepare_run(source_path("configs/quickstart.toml"), {"parallel.data=frozen-replicated"});
  const RankDataCost old = plan_data_cost(frozen, 0, 2);
  ::unsetenv("PLAIT_PLUGIN_PATH");
  CHECK(old.plugin == "frozen-replicated");
  CHECK_FALSE(old.cost.has_value());
  CHECK(old.rank.elements() > 0);  // the rank's parameters are listed all the same
  const PreparedRun current = prepare_run(source_path("configs/quickstart.toml"), {});
  const RankDataCost ddp = plan_data_cost(current, 0, 2);
  REQUIRE(ddp.cost.has_value());
  CHECK(ddp.cost->state.params == old.rank.elements() * 4);
}

TEST_CASE("a data plugin of 12.0 is refused before launch under train.freeze (12.6), naming the capability it lacks",
          "[sdk][frozen]") {
  // Its StageModel::parameters() (inline, as 12.0 compiled it) would hand it the frozen
  // parameters too, and it would step them: the core asks for the capability instead.
  TempDir dir;
  const ProcessResult r = run_plait(
      with_sets({"run", source_path("configs/quickstart.toml"), "--steps", "1", "--out", (dir / "run").string()},
                {"parallel.data=frozen-replicated", R"(train.freeze=["transformer.wte.weight"])"}),
      kFrozenPath);
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains("data plugin 'frozen-replicated' cannot be combined with train.freeze (frozen "
                                "parameters) (--set train.freeze=") &&
                           Contains("): it lacks the capability 'frozen'"));
  CHECK(!std::filesystem::exists(dir / "run/metrics.jsonl"));
}
