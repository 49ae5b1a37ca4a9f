// What a run of T tokens costs with a plan: steps, saves at Young and Daly's interval,
// interruptions at the hardware file's rate, wall-clock time, accelerator-hours, price.
#include <cmath>

#include <catch2/catch.hpp>

#include "plait/sdk/error.hpp"
#include "plan/run_cost.hpp"

using namespace plait;
using Catch::Matchers::Contains;

namespace {

// 64 accelerators (8 nodes of 8) taking 2 s for a step of a million tokens.
ConfigPrediction plan_of_64() {
  ConfigPrediction p;
  p.dp = 64;
  p.phases.compute = 2.0;
  p.tokens_per_step = 1e6;
  return p;
}

Hardware machine() {
  Hardware hw = load_hardware("h100-sxm");
  hw.gpus_per_node = 8;
  hw.interruptions_per_gpu_hour = 1e-3;
  hw.restart_minutes = 6.0;
  hw.checkpoint_gbps = 1.0;
  hw.on_demand_per_gpu_hour = 2.0;
  hw.reserved_per_gpu_hour = 1.0;
  return hw;
}

}  // namespace

TEST_CASE("a run's cost: its steps, saves at the interval that loses least, interruptions, days and price", "[plan]") {
  const RunCost c = price_run(machine(), plan_of_64(), 3.6e9, 1.6e10);
  CHECK(c.steps == 3600);
  CHECK(c.training_hours == Approx(2.0));
  CHECK(c.save_seconds == Approx(2.0));  // 16 GB over 8 nodes at 1 GB/s each
  const double rate = 64 * 1e-3;         // interruptions per hour of the job
  const double interval = std::sqrt(2 * (2.0 / 3600) / rate);
  CHECK(c.save_interval_hours == Approx(interval));
  const double wall = 2.0 * (1 + (2.0 / 3600) / interval) / (1 - rate * (0.1 + interval / 2));
  CHECK(c.wall_hours == Approx(wall));
  CHECK(c.wall_hours > c.training_hours);
  CHECK(c.interruptions == Approx(rate * wall));
  CHECK(c.gpu_hours == Approx(64 * wall));
  CHECK(*c.on_demand == Approx(2 * 64 * wall));
  CHECK(*c.reserved == Approx(64 * wall));
}

TEST_CASE("a run on machines that never fail takes its steps' time, and one interrupted faster than it restarts is "
          "refused",
          "[plan]") {
  Hardware hw = machine();
  hw.interruptions_per_gpu_hour = 0;
  const RunCost steady = price_run(hw, plan_of_64(), 3.6e9, 1.6e10);
  CHECK(steady.wall_hours == Approx(2.0));
  CHECK(steady.interruptions == 0);
  hw.interruptions_per_gpu_hour = 1.0;  // 64 an hour, each 6 minutes to restart
  CHECK_THROWS_WITH(price_run(hw, plan_of_64(), 3.6e9, 1.6e10),
                    Contains("on 64 accelerators a job is interrupted every 0.9375 minutes"));
}
