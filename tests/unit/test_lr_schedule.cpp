#include <catch2/catch.hpp>

#include "train/lr_schedule.hpp"

using namespace plait;

TEST_CASE("warmup rises linearly as nanoGPT's get_lr", "[train]") {
  LrSchedule s{"cosine", 1.0, 4, 100, 0.1};
  CHECK(s.at(1) == Approx(1.0 / 5));
  CHECK(s.at(4) == Approx(4.0 / 5));
  CHECK(s.at(5) == Approx(1.0));  // first step after warmup: the peak
}

TEST_CASE("cosine decays to min_lr_ratio * lr at the last step", "[train]") {
  LrSchedule s{"cosine", 2.0, 0, 11, 0.1};
  CHECK(s.at(1) == Approx(2.0));
  CHECK(s.at(6) == Approx(0.2 + 0.5 * (2.0 - 0.2)));  // half way
  CHECK(s.at(11) == Approx(0.2));
}

TEST_CASE("constant holds lr after warmup", "[train]") {
  LrSchedule s{"constant", 3.0, 2, 10, 0.1};
  CHECK(s.at(1) == Approx(1.0));
  CHECK(s.at(3) == 3.0);
  CHECK(s.at(10) == 3.0);
}
