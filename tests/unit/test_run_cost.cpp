// What a run of T tokens costs with a plan: steps, saves at Young and Daly's interval,
// interruptions at the hardware file's rate, wall-clock time, accelerator-hours, price.
#include <cmath>
#include <regex>
#include <utility>

#include <catch2/catch.hpp>

#include "plait/sdk/error.hpp"
#include "plan/run_cost.hpp"
#include "support/test_support.hpp"

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

TEST_CASE("plait plan --tokens takes a count as a person writes it: 2e12, 500M, 20B or 20G, 2T, either case", "[plan]") {
  CHECK(token_count("--tokens", "2e12") == 2e12);
  CHECK(token_count("--tokens", "2000000000000") == 2e12);
  CHECK(token_count("--tokens", "1T") == 1e12);
  CHECK(token_count("--tokens", "1.5t") == 1.5e12);
  CHECK(token_count("--tokens", "20B") == 20e9);
  CHECK(token_count("--tokens", "20g") == 20e9);
  CHECK(token_count("--tokens", "500M") == 500e6);
  CHECK(token_count("--tokens", "64k") == 64e3);
  for (const std::string bad : {"", "T", "1X", "1TB", "one", " 1T", "1T ", "5TK"}) {
    INFO("'" << bad << "'");
    CHECK_THROWS_WITH(token_count("--tokens", bad), Contains("--tokens " + bad + ": not a count of tokens"));
  }
  CHECK_THROWS_WITH(token_count("--tokens", "0"), Contains("--tokens 0: the count must be finite and above 0"));
  CHECK_THROWS_WITH(token_count("--tokens", "-2T"), Contains("--tokens -2T: the count must be finite and above 0"));
  CHECK_THROWS_WITH(token_count("--tokens", "inf"), Contains("--tokens inf: the count must be finite and above 0"));
  CHECK(token_count("--tokens", "1e18") == 1e18);
  for (const std::string huge : {"1e30", "2000000T", "1e300"}) {
    CHECK_THROWS_WITH(token_count("--tokens", huge), Contains("--tokens " + huge + ": more than 1e18 tokens"));
  }
  try {
    token_count("--tokens", "1X");
  } catch (const Error& e) {
    CHECK_THAT(e.hint(), Contains("500M, 20B, 2T"));
  }
}

TEST_CASE("a small run's cost is printed to two significant digits, never as a rounded 0", "[plan]") {
  const std::vector<std::string> args = {"plan", "--explain", test::source_path("configs/quickstart.toml"), "--hardware",
                                         "a100-80g", "--tokens", "1M"};
  std::vector<std::string> json_args = args;
  json_args.push_back("--json");
  const nlohmann::json j = test::plait_json(json_args);
  const nlohmann::json& cost = j.at("cost");
  CHECK(cost.at("tokens").get<double>() == 1e6);
  const auto gpu_hours = cost.at("gpu_hours").get<double>(), usd = cost.at("on_demand").get<double>();
  REQUIRE(gpu_hours < 1);  // the case: a figure %.0f printed as 0
  const test::ProcessResult text = test::run_plait(args);
  INFO(text.output);
  REQUIRE(text.exit_code == 0);
  std::smatch hours, price;
  REQUIRE(std::regex_search(text.output, hours, std::regex("; ([0-9.e+-]+) accelerator-hours")));
  REQUIRE(std::regex_search(text.output, price, std::regex("; ([0-9.e+-]+) USD on demand")));
  for (const auto& [shown, exact] : {std::pair{hours[1].str(), gpu_hours}, std::pair{price[1].str(), usd}}) {
    INFO(shown << " for " << exact);
    CHECK(std::stod(shown) > 0);
    CHECK(std::stod(shown) == Approx(exact).epsilon(0.05));  // two significant digits
  }
}
