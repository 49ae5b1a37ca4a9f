#pragma once
// What training on T tokens costs with a plan: its steps at the predicted step time, the
// saves and the interruptions a job of that size meets (the hardware file's failure rate,
// restart time and checkpoint bandwidth), the wall-clock time, accelerator-hours and
// price. Saves are made at the interval that loses the least time (Young and Daly:
// sqrt(2 x save time x the job's mean time between interruptions)); each interruption
// costs the restart and, on average, half an interval of steps trained again.
#include <optional>
#include <string>

#include "plan/config_prediction.hpp"
#include "plan/hardware.hpp"

namespace plait {

struct RunCost {
  double tokens = 0;
  double steps = 0;
  double training_hours = 0;       // the steps alone
  double save_seconds = 0;         // one checkpoint: every node writes its ranks' shards at once
  double save_interval_hours = 0;  // the interval that minimises the time lost
  double interruptions = 0;        // expected over the run
  double wall_hours = 0;           // with the saves and the interruptions
  double gpu_hours = 0;
  std::string currency;
  std::optional<double> on_demand, reserved;  // the run's price, where the hardware file has one
};

// A count of tokens as a person writes it: 2e12, 2000000000000, or with a suffix (K, M,
// B or G, T; either case): 500M, 20B, 2T. Anything else, or a count not above 0, is
// refused in one sentence naming `flag` ("--tokens").
double token_count(const std::string& flag, const std::string& text);

// `checkpoint_bytes`: what one save writes in all (the model's float32 weights and AdamW's
// two moments: 12 bytes a parameter).
RunCost price_run(const Hardware& hw, const ConfigPrediction& plan, double tokens, double checkpoint_bytes);

}  // namespace plait
