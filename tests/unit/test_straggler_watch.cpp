// The live straggler report: a rank whose own time per step (step time less its waits)
// is well above the median rank's over the last recorded steps is named as it starts and
// stops lagging; noise and small gaps are not.
#include <catch2/catch.hpp>

#include "metrics/straggler_watch.hpp"

using namespace plait;
using Catch::Matchers::Contains;

TEST_CASE("a rank whose own time per step is well above the median rank's is a straggler, named once", "[straggler]") {
  StragglerWatch watch(/*window=*/5, /*ratio=*/1.5, /*min_gap_ms=*/20.0);
  // Two recorded steps are too few to judge.
  CHECK_FALSE(watch.add({100, 102, 98, 400}));
  CHECK_FALSE(watch.add({101, 99, 100, 410}));
  const auto found = watch.add({100, 100, 103, 390});
  REQUIRE(found);
  CHECK(found->rank == 3);
  CHECK(found->own_ms == 400.0);
  CHECK(found->median_ms == 100.0);  // the ranks' medians over the window: 100, 100, 100, 400
  CHECK_THAT(watch.change(found, 30), Contains("step 30: rank 3 is a straggler: 400 ms of its own work per step against "
                                               "the median rank's 100 ms over the last 3 recorded steps (4x)"));
  CHECK(watch.change(watch.add({100, 100, 100, 420}), 31).empty());  // still rank 3: said already
  // It catches up: once its median over the window is back, that is said too.
  std::optional<Straggler> now;
  for (int i = 0; i < 5; ++i) now = watch.add({100, 100, 100, 101});
  CHECK_FALSE(now);
  CHECK(watch.change(now, 40) == "step 40: rank 3 no longer lags the others");
}

TEST_CASE("small gaps and one slow step are not stragglers", "[straggler]") {
  StragglerWatch watch(5, 1.5, 20.0);
  // 1.8x but only 8 ms more: tiny steps vary that much.
  for (int i = 0; i < 5; ++i) CHECK_FALSE(watch.add({10, 10, 18, 10}));
  StragglerWatch once(5, 1.5, 20.0);
  CHECK_FALSE(once.add({100, 100, 100, 100}));
  CHECK_FALSE(once.add({100, 100, 100, 100}));
  CHECK_FALSE(once.add({100, 500, 100, 100}));  // one step: the median over the window is still 100
  CHECK_FALSE(once.add({100, 100, 100, 100}));
  // A single rank has no one to lag.
  CHECK_FALSE(StragglerWatch().add({500}));
}
