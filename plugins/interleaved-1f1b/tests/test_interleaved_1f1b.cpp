// interleaved-1f1b: the schedule's shape (idle share (p-1)/(v*m+p-1)), the refusal of a
// microbatch count that is not a multiple of pp, and the equivalence harness on 2 and 4
// ranks (4 and 8 virtual stages), both families, float64 and float32.
#include <catch2/catch.hpp>

#include "plait/sdk/error.hpp"
#include "support/pipeline_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;

TEST_CASE("interleaved-1f1b idles (p-1)/(v*m+p-1)", "[interleaved-1f1b]") {
  for (int pp : {2, 4}) {
    for (int v : {2, 4}) {
      for (int m : {pp, 2 * pp}) {
        if (pp * v > 8) continue;  // the test model has 8 blocks
        const SchedulePlan plan =
            quickstart_schedule("interleaved-1f1b", pp, m, {concat("interleaved-1f1b.virtual_stages=", v)});
        INFO("pp " << pp << " v " << v << " m " << m);
        CHECK(plan.spec.stages() == pp * v);
        for (int r = 0; r < pp; ++r) {
          CHECK(plan.simulated.idle_fraction[r] == Approx(double(pp - 1) / (v * m + pp - 1)));
        }
      }
    }
  }
}

TEST_CASE("interleaved-1f1b refuses microbatches that pp does not divide, before launch", "[interleaved-1f1b]") {
  TempDir dir;
  ProcessResult r = run_plait({"run", source_path("configs/quickstart.toml"), "--out", (dir / "run").string(), "--set",
                               "parallel.pipeline=interleaved-1f1b", "--set", "parallel.pp=2", "--set", "parallel.dp=1",
                               "--set", "model.n_layer=4", "--set", "train.grad_accum=3"});
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains("interleaved-1f1b needs the microbatches (train.grad_accum = 3) to be a multiple of pp = 2") &&
                           Contains("set train.grad_accum to 4"));
  CHECK_FALSE(fs::exists(dir / "run" / "rank-0.log"));  // no rank started
}

// 2 virtual stages per rank: 4 and 8 stages.
PLAIT_PIPELINE_EQUIVALENCE_MATRIX("interleaved-1f1b", 4, 8)
