#pragma once
// A pipeline schedule is data: for each rank, an ordered list of actions. The core's
// executor runs them; a schedule plugin only produces them.
#include <cstdint>
#include <vector>

#include "plait/sdk/context.hpp"
#include "plait/sdk/plugin.hpp"

namespace plait {

enum class ActionType {
  forward,         // run stage on microbatch
  backward,        // input-gradient (and weight-gradient unless split) of stage on microbatch
  weight_grad,     // the deferred weight-gradient part, for schedules that split backward
  send_activation,
  recv_activation,
  send_grad,
  recv_grad,
};

struct Action {
  ActionType type = ActionType::forward;
  int64_t stage = 0;       // virtual stage index (0 .. pp*v-1)
  int64_t microbatch = 0;
};

struct ScheduleSpec {
  int64_t stages_per_rank = 1;  // v: virtual stages per rank
  int64_t pp = 1;               // pipeline ranks
  int64_t microbatches = 1;     // m per optimizer step
};

class PLAIT_SDK_VISIBLE PipelineSchedule : public Plugin {
 public:
  using Interface = PipelineSchedule;
  static constexpr const char* kKind = "pipeline";
  virtual void configure(PluginContext& context) {}
  // Virtual stages each rank holds for this spec (1 for non-interleaved schedules).
  virtual int64_t stages_per_rank(const Options& options) const { return 1; }
  // The ordered actions of one pipeline rank for one optimizer step.
  virtual std::vector<Action> actions(const ScheduleSpec& spec, int64_t pp_rank) const = 0;
};

}  // namespace plait
