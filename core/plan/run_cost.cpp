#include "plan/run_cost.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "plait/sdk/error.hpp"
#include "util/abbreviate.hpp"

namespace plait {

double token_count(const std::string& flag, const std::string& text) {
  static const std::pair<char, double> kSuffixes[] = {{'k', 1e3}, {'m', 1e6}, {'b', 1e9}, {'g', 1e9}, {'t', 1e12}};
  std::string number = text;
  double scale = 1;
  const char last = number.empty() ? '\0' : static_cast<char>(std::tolower(static_cast<unsigned char>(number.back())));
  for (const auto& [suffix, factor] : kSuffixes) {
    if (last == suffix) scale = factor;
  }
  if (scale != 1) number.pop_back();
  char* end = nullptr;
  const double value = std::strtod(number.c_str(), &end);
  const std::string shown = concat(flag, " ", abbreviate(text, 40)),
                    hint = concat(flag, " takes a count of tokens above 0: 2e12, 2000000000000, or with a suffix K, M, "
                                        "B (or G), T: 500M, 20B, 2T");
  PLAIT_CHECK(!number.empty() && std::isspace(static_cast<unsigned char>(number.front())) == 0 &&
                  end == number.c_str() + number.size(),
              concat(shown, ": not a count of tokens"), hint);
  PLAIT_CHECK(std::isfinite(value * scale) && value > 0, concat(shown, ": the count must be finite and above 0"), hint);
  // Steps, days and costs are counted in 64-bit integers: a count this far past any run
  // (Llama 3 trained on 1.5e13 tokens) would overflow them.
  PLAIT_CHECK(value * scale <= 1e18, concat(shown, ": more than 1e18 tokens, past what plait can price"),
              concat(flag, " takes up to 1e18 tokens (the largest published runs train on about 2e13)"));
  return value * scale;
}

RunCost price_run(const Hardware& hw, const ConfigPrediction& plan, double tokens, double checkpoint_bytes) {
  PLAIT_CHECK(tokens > 0, concat("--tokens ", tokens), "the tokens to train on, above 0 (e.g. 2e12)");
  RunCost c;
  c.tokens = tokens;
  c.currency = hw.currency;
  const auto gpus = static_cast<double>(plan.gpus());
  c.steps = std::ceil(tokens / plan.tokens_per_step);
  c.training_hours = c.steps * plan.phases.total() / 3600.0;
  const double nodes = std::ceil(gpus / static_cast<double>(hw.gpus_per_node));
  c.save_seconds = checkpoint_bytes / (nodes * hw.checkpoint_gbps * 1e9);
  const double rate = hw.interruptions_per_gpu_hour * gpus;  // the job's interruptions per hour
  const double restart_hours = hw.restart_minutes / 60.0;
  double lost_share = 0;  // of the wall-clock time, to interruptions
  if (rate > 0) {
    c.save_interval_hours = std::sqrt(2.0 * (c.save_seconds / 3600.0) / rate);
    lost_share = rate * (restart_hours + c.save_interval_hours / 2.0);
  }
  PLAIT_CHECK(lost_share < 1,
              concat("on ", plan.gpus(), " accelerators a job is interrupted every ", 60.0 / rate,
                     " minutes, more often than it can restart and save (", hw.restart_minutes, " minutes to restart)"),
              "fewer accelerators, a faster restart or a faster checkpoint store in the hardware file's [reliability]");
  const double saving = c.save_interval_hours > 0 ? 1.0 + c.save_seconds / 3600.0 / c.save_interval_hours : 1.0;
  c.wall_hours = c.training_hours * saving / (1.0 - lost_share);
  c.interruptions = rate * c.wall_hours;
  c.gpu_hours = c.wall_hours * gpus;
  if (hw.on_demand_per_gpu_hour) c.on_demand = c.gpu_hours * *hw.on_demand_per_gpu_hour;
  if (hw.reserved_per_gpu_hour) c.reserved = c.gpu_hours * *hw.reserved_per_gpu_hour;
  return c;
}

}  // namespace plait
