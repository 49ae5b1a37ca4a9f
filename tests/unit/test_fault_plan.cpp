// [debug] faults as the user writes them: each kind's form, and the sentence a malformed
// one, or one that would never strike, is refused with (naming where it was written).
#include <catch2/catch.hpp>

#include <cstdlib>

#include "debug/fault_plan.hpp"
#include "plait/sdk/error.hpp"

using namespace plait;
using Catch::Matchers::Contains;

namespace {

std::string refusal(const std::vector<std::string>& specs, int world = 4, int64_t steps = 10, int64_t restarts = 0) {
  try {
    check_faults(parse_faults(specs, "run.toml:7"), world, steps, restarts);
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

TEST_CASE("PLAIT_FAULTS adds faults, separated by semicolons, named as such in their errors", "[debug]") {
  ::setenv("PLAIT_FAULTS", "exit rank=1 step=2; hang rank=0 step=3", 1);
  const auto f = configured_faults({"kill rank=2 step=4"}, "run.toml:7");
  ::setenv("PLAIT_FAULTS", "bogus rank=0 step=1", 1);
  std::string error;
  try {
    configured_faults({}, "run.toml:7");
  } catch (const Error& e) {
    error = e.what();
  }
  ::unsetenv("PLAIT_FAULTS");
  REQUIRE(f.size() == 3);
  CHECK((f[1].kind == FaultKind::exit && f[1].place == "PLAIT_FAULTS" && f[2].kind == FaultKind::hang));
  CHECK_THAT(error, Contains("PLAIT_FAULTS: fault 'bogus rank=0 step=1'"));
}
