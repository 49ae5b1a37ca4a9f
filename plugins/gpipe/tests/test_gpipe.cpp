// gpipe: the schedule's shape (idle share and microbatches in flight, played by the
// core's checker) and the equivalence harness on 2 and 4 stages, both families, float64
// and float32.
#include <catch2/catch.hpp>

#include "support/pipeline_support.hpp"

using namespace plait;
using namespace plait::test;

TEST_CASE("gpipe idles (p-1)/(m+p-1) and holds every microbatch", "[gpipe]") {
  for (int pp : {2, 4}) {
    for (int m : {1, 4, 8}) {
      const SchedulePlan plan = quickstart_schedule("gpipe", pp, m);
      INFO("pp " << pp << " m " << m);
      for (int r = 0; r < pp; ++r) {
        CHECK(plan.simulated.idle_fraction[r] == Approx(double(pp - 1) / (m + pp - 1)));
        CHECK(plan.simulated.peak_in_flight[r] == m);
      }
    }
  }
}

PLAIT_PIPELINE_EQUIVALENCE_MATRIX("gpipe", 4, 4)
