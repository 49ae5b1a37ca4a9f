// [debug] faults as the user writes them: each kind's form, and the sentence a malformed
// one, or one that would never strike, is refused with (naming where it was written).
#include <catch2/catch.hpp>

#include <cstdlib>

#include "config/config_loader.hpp"
#include "config/resolve.hpp"
#include "debug/fault_injector.hpp"
#include "debug/fault_plan.hpp"
#include "plait/sdk/error.hpp"
#include "run/prepare.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;

namespace {

ResolvedConfig resolve_text(const TempDir& dir, const std::string& text) {
  const auto file = write_file(dir / "run.toml", text);
  const LoadedConfig loaded = load_config(file.string(), {});
  const PluginRegistry registry = discover_plugins(config_plugin_dirs(loaded.tree));
  return resolve_config(loaded.tree, registry);
}

std::string refusal(const std::vector<std::string>& specs, int world = 4, int64_t steps = 10, int64_t restarts = 0) {
  try {
    check_faults(parse_faults(specs, "run.toml:7"), {.world_size = world, .steps = steps, .max_restarts = restarts});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("faults parse into kind, rank, step or op, and ms", "[debug]") {
  const auto f = parse_faults({"kill rank=3 step=5", "mismatch rank=1 op=dp.0#12", "slow rank=2 ms=250", "corrupt step=4"},
                              "run.toml:7");
  REQUIRE(f.size() == 4);
  CHECK((f[0].kind == FaultKind::kill && f[0].rank == 3 && f[0].step == 5 && f[0].op == 0));
  CHECK((f[1].kind == FaultKind::mismatch && f[1].rank == 1 && f[1].group == "dp.0" && f[1].op == 12 && f[1].step == 0));
  CHECK((f[2].kind == FaultKind::slow && f[2].ms == 250.0 && f[2].step == 1));
  CHECK((f[3].kind == FaultKind::corrupt && f[3].rank == 0 && f[3].step == 4));
  CHECK(f[1].place == "run.toml:7");
}

TEST_CASE("a malformed fault is refused naming its place and the form", "[debug]") {
  CHECK_THAT(refusal({"kil rank=1 step=2"}), Contains("run.toml:7: fault 'kil rank=1 step=2': 'kil' is not a fault") &&
                                                 Contains("did you mean 'kill'"));
  CHECK_THAT(refusal({"kill step=2"}), Contains("it names no rank"));
  CHECK_THAT(refusal({"hang rank=1"}), Contains("it names neither a step nor an op"));
  CHECK_THAT(refusal({"hang rank=1 step=2 op=dp.0#3"}), Contains("it names both a step and an op"));
  CHECK_THAT(refusal({"exit rank=1 op=dp.0"}), Contains("op=dp.0 does not name GROUP#N"));
  CHECK_THAT(refusal({"exit rank=x step=1"}), Contains("rank=x is not a whole number"));
  CHECK_THAT(refusal({"slow rank=1"}), Contains("a slow fault needs ms=M"));
  CHECK_THAT(refusal({"mismatch rank=1 step=3"}), Contains("a mismatch is of one collective: it takes op=GROUP#N"));
  CHECK_THAT(refusal({"kill rank=1 step=0"}), Contains("step=0 is not a step"));
  CHECK_THAT(refusal({"kill rank=1 stpe=2"}), Contains("'stpe' is not a fault's key") && Contains("did you mean 'step'"));
}

TEST_CASE("a fault on a rank the job lacks, or past its last step, is refused before launch", "[debug]") {
  CHECK_THAT(refusal({"kill rank=4 step=2"}), Contains("run.toml:7: fault 'kill rank=4 step=2' is on rank 4, which this "
                                                       "job does not have (4 ranks)"));
  CHECK_THAT(refusal({"hang rank=1 step=11"}), Contains("is at step 11, past the run's last step (10)"));
  CHECK(refusal({"hang rank=3 step=10", "abort rank=0 op=world#1"}).empty());
  // A fault in a start the job never makes would never strike.
  CHECK_THAT(refusal({"kill rank=1 step=2 attempt=1"}),
             Contains("strikes in attempt 1, but the job restarts at most 0 time(s): it would never happen"));
  CHECK(refusal({"kill rank=1 step=2 attempt=1"}, 4, 10, /*restarts=*/1).empty());
  CHECK(parse_faults({"kill rank=1 step=2 attempt=2"}, "x").at(0).attempt == 2);
  CHECK(parse_faults({"kill rank=1 step=2"}, "x").at(0).attempt == 0);
}

namespace {

// A job of dp 2 x tp 2 (ranks 0-1 and 2-3 are the tp groups tp.0 and tp.2; 0 and 2 make
// dp.0, 1 and 3 dp.1) that saves a checkpoint every 4 steps of 10 and after the last.
FaultReach dp2_tp2() {
  return {.world_size = 4,
          .steps = 10,
          .max_restarts = 0,
          .groups_of = [](int rank) {
            return std::vector<std::string>{"world", rank % 2 == 0 ? "dp.0" : "dp.1", rank < 2 ? "tp.0" : "tp.2"};
          },
          .saves_at = [](int64_t step) { return step % 4 == 0 || step == 10; }};
}

std::string reach_refusal(const std::string& spec, const FaultReach& reach) {
  try {
    check_faults(parse_faults({spec}, "run.toml:7"), reach);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a fault that could never strike is refused before launch: a group its rank is not in, a job of one rank, "
          "a corrupt at a step that saves nothing",
          "[debug]") {
  CHECK(reach_refusal("kill rank=2 op=tp.2#3", dp2_tp2()).empty());
  CHECK(reach_refusal("mismatch rank=1 op=dp.1#5", dp2_tp2()).empty());
  CHECK(reach_refusal("hang rank=3 op=dp.1.shard#2", dp2_tp2()).empty());  // a plugin's subgroup under dp.1
  CHECK_THAT(reach_refusal("kill rank=0 op=tp.2#1", dp2_tp2()),
             Contains("run.toml:7: fault 'kill rank=0 op=tp.2#1' is on group tp.2, which rank 0 is not in: it would never "
                      "happen (rank 0's groups: world, dp.0, tp.0)"));
  CHECK_THAT(reach_refusal("kill rank=1 op=pp.0#1", dp2_tp2()), Contains("is on group pp.0, which rank 1 is not in"));
  FaultReach one = dp2_tp2();
  one.world_size = 1;
  one.groups_of = [](int) { return std::vector<std::string>{}; };
  CHECK_THAT(reach_refusal("abort rank=0 op=world#1", one),
             Contains("is on group world, which rank 0 never issues a collective on: this job has no groups (one rank)"));
  CHECK(reach_refusal("corrupt rank=1 step=8", dp2_tp2()).empty());
  CHECK(reach_refusal("corrupt rank=1 step=10", dp2_tp2()).empty());
  CHECK_THAT(reach_refusal("corrupt rank=1 step=6", dp2_tp2()),
             Contains("fault 'corrupt rank=1 step=6' spoils the checkpoint of step 6, but this run saves none at step 6"));
}

TEST_CASE("faults that could never strike together are refused: one listed twice, one after another ended the attempt, "
          "an abort on a job of one rank",
          "[debug]") {
  auto together = [](const std::vector<std::string>& specs, const FaultReach& reach) -> std::string {
    try {
      check_faults(parse_faults(specs, "run.toml:7"), reach);
    } catch (const Error& e) {
      return concat(e.what(), "\nhint: ", e.hint());
    }
    return "";
  };
  FaultReach restarting = dp2_tp2();
  restarting.max_restarts = 2;
  CHECK(together({"kill rank=1 step=3", "kill rank=1 step=5 attempt=1"}, restarting).empty());
  CHECK(together({"kill rank=1 step=3", "exit rank=2 step=3"}, restarting).empty());  // the same step: both may strike
  CHECK(together({"slow rank=1 step=2 ms=5", "kill rank=0 step=4"}, restarting).empty());
  CHECK(together({"corrupt rank=1 step=4", "kill rank=0 step=6"}, restarting).empty());
  CHECK_THAT(together({"kill rank=1 step=3", "kill rank=1 step=3"}, restarting),
             Contains("run.toml:7: fault 'kill rank=1 step=3' is listed twice (as 'kill rank=1 step=3'): the second "
                      "would never happen"));
  CHECK_THAT(together({"segv rank=2 step=7", "exit  rank=2 step=7", "segv rank=2 step=7 attempt=0"}, restarting),
             Contains("fault 'segv rank=2 step=7 attempt=0' is listed twice (as 'segv rank=2 step=7')"));
  CHECK_THAT(together({"kill rank=0 step=5", "hang rank=1 step=2"}, restarting),
             Contains("fault 'kill rank=0 step=5' is at step 5 of attempt 0, but 'hang rank=1 step=2' ends that attempt "
                      "at step 2: it would never happen") &&
                 Contains("give it attempt=1"));
  CHECK_THAT(together({"abort rank=3 step=1 attempt=1", "exit rank=0 step=9 attempt=1"}, restarting),
             Contains("ends that attempt at step 1"));
  FaultReach one = dp2_tp2();
  one.world_size = 1;
  one.groups_of = [](int) { return std::vector<std::string>{}; };
  CHECK_THAT(together({"abort rank=0 step=2"}, one),
             Contains("fault 'abort rank=0 step=2' breaks a collective, but rank 0 issues none (this job has one rank)"));
  CHECK(together({"exit rank=0 step=2"}, one).empty());
}

TEST_CASE("a fault that gives a key twice is refused, not read with one of them", "[debug]") {
  CHECK_THAT(refusal({"kill rank=1 rank=2 step=3"}),
             Contains("run.toml:7: fault 'kill rank=1 rank=2 step=3': rank= is given twice"));
  CHECK_THAT(refusal({"slow rank=1 ms=5 ms=50"}), Contains("ms= is given twice"));
  CHECK_THAT(refusal({"slow rank=1 ms=1e300"}), Contains("run.toml:7: fault 'slow rank=1 ms=1e300': ms=1e300 is more than an hour a step"));
}

TEST_CASE("PLAIT_FAULTS adds faults, separated by semicolons, named as such in their errors", "[debug]") {
  TempDir dir;
  const ResolvedConfig config = resolve_text(dir, "[debug]\nfaults = [\"kill rank=2 step=4\"]\n");
  const ResolvedConfig none = resolve_text(dir, "");
  ::setenv("PLAIT_FAULTS", "exit rank=1 step=2; hang rank=0 step=3", 1);
  const auto f = configured_faults(config);
  ::setenv("PLAIT_FAULTS", "bogus rank=0 step=1", 1);
  std::string error;
  try {
    configured_faults(none);
  } catch (const Error& e) {
    error = e.what();
  }
  ::unsetenv("PLAIT_FAULTS");
  REQUIRE(f.size() == 3);
  CHECK((f[1].kind == FaultKind::exit && f[1].place == "PLAIT_FAULTS" && f[2].kind == FaultKind::hang));
  CHECK_THAT(error, Contains("PLAIT_FAULTS: fault 'bogus rank=0 step=1'"));
}

TEST_CASE("one fault plan: the older [debug] slow and nonfinite keys are the faults they stand for, placed where they "
          "were set, and nonfinite is a fault of its own",
          "[debug]") {
  TempDir dir;
  const ResolvedConfig config = resolve_text(dir, "[debug]\nslow_ms = 40\nslow_rank = 1\nnonfinite_step = 3\n"
                                                  "faults = [\"nonfinite rank=1 step=5\"]\n");
  const auto f = configured_faults(config);
  REQUIRE(f.size() == 3);
  CHECK((f[0].kind == FaultKind::nonfinite && f[0].rank == 1 && f[0].step == 5));
  CHECK((f[1].kind == FaultKind::nonfinite && f[1].rank == 0 && f[1].step == 3 && f[1].text == "nonfinite rank=0 step=3"));
  CHECK_THAT(f[1].place, Contains("run.toml:4:"));  // nonfinite_step's line: the rank was left at its default
  CHECK((f[2].kind == FaultKind::slow && f[2].rank == 1 && f[2].ms == 40.0 && f[2].step == 1));
  CHECK_THAT(f[2].place, Contains("run.toml:3:"));  // slow_rank's line
  CHECK_THAT(refusal({"nonfinite rank=1"}), Contains("it names neither a step nor an op"));
  CHECK_THAT(refusal({"nonfinite rank=1 step=11"}), Contains("past the run's last step (10)"));

  // Rank 1's injector: step 3 is slowed only, step 5 slowed and its loss spoiled; rank 0's
  // loss is spoiled at step 3.
  FaultInjector one(f, 1, 0, "");
  CHECK(one.at_step(3).slow_ms == 40.0);
  CHECK_FALSE(one.at_step(3).spoil_loss);
  const FaultInjector::InStep five = one.at_step(5);
  CHECK((five.slow_ms == 40.0 && five.spoil_loss));
  FaultInjector zero(f, 0, 0, "");
  CHECK(zero.at_step(3).spoil_loss);
  CHECK_FALSE(zero.at_step(4).spoil_loss);
  CHECK(zero.at_step(4).slow_ms == 0.0);
}
