#pragma once
// A pipeline schedule is data: for each pipeline rank, an ordered list of actions. The
// core's executor runs them; a schedule plugin only produces them, and the core checks
// every rank's list (each forward and backward once, sends matched by receives, no
// wait that can never end) before any rank starts.
//
// Stages: the model's units are cut into S = pp * v consecutive virtual stages; virtual
// stage s lives on pipeline rank s % pp (Megatron's interleaving; v = 1: stage s on
// rank s). The executor's rules, which a schedule must respect:
//   - forward(s, i) of a stage s > 0 reads the activation of an earlier recv_activation(s, i);
//   - send_activation(s, i) (s < S-1) follows forward(s, i) and goes to stage s+1;
//   - backward(s, i) of a stage s < S-1 reads the gradient of an earlier recv_grad(s, i);
//     the last stage's backward starts from the loss;
//   - send_grad(s, i) (s > 0) follows backward(s, i) and goes to stage s-1.
// Each run of adjacent send/recv actions (no compute between them) is posted as one
// batch_p2p group; a receive is waited for by the compute that needs it, so a schedule
// may post receives early. The lists must work under NCCL's semantics: the k-th
// message a rank sends to another is the other's k-th receive from it, a send may wait
// until its receive is posted, and a rank's groups run one after another; so a pair's
// opposite messages belong in one group (Megatron's send_forward_recv_backward). The
// core plays the lists that way before launch and names the ranks and messages of a
// mismatch or deadlock. Data-parallel hooks see the backwards of a rank in list order
// (see data_parallel.hpp).
#include <cstdint>
#include <string>
#include <vector>

#include "plait/sdk/plugin.hpp"

namespace plait {

enum class ActionType {
  forward,         // run stage on microbatch
  backward,        // input-gradient and weight-gradient of stage on microbatch
  weight_grad,     // a deferred weight-gradient part (zero-bubble schedules); not run by this core yet
  send_activation,
  recv_activation,
  send_grad,
  recv_grad,
};

struct Action {
  ActionType type = ActionType::forward;
  int64_t stage = 0;       // virtual stage index (0 .. pp*v-1)
  int64_t microbatch = 0;  // 0 .. m-1
};

struct PLAIT_ABI_GROWS ScheduleSpec {
  int64_t pp = 1;                // pipeline ranks
  int64_t stages_per_rank = 1;   // v: virtual stages per rank
  int64_t microbatches = 1;      // m per optimizer step (train.grad_accum)
  int64_t stages() const { return pp * stages_per_rank; }
};

inline int64_t rank_of_stage(int64_t stage, int64_t pp) { return stage % pp; }

inline const char* action_name(ActionType t) {
  switch (t) {
    case ActionType::forward: return "forward";
    case ActionType::backward: return "backward";
    case ActionType::weight_grad: return "weight_grad";
    case ActionType::send_activation: return "send_activation";
    case ActionType::recv_activation: return "recv_activation";
    case ActionType::send_grad: return "send_grad";
    case ActionType::recv_grad: return "recv_grad";
  }
  return "?";
}

// API 12.1, an extension (plugin.hpp): what the schedule's idle share should be, for
// `plait schedule show`, the pipeline benchmark and a planner to hold the measured share
// to. A schedule without it (one built for API 12.0) is shown without a formula.
class PLAIT_SDK_VISIBLE ScheduleModel {
 public:
  static constexpr const char* kExtension = "plait.schedule_model/1";
  virtual ~ScheduleModel() = default;
  // The share of a step each pipeline rank idles, with the costs `plait schedule show`
  // plays (a forward 1, a backward 2, transfers free): for GPipe and 1F1B (p-1)/(m+p-1).
  virtual double ideal_idle_share(const ScheduleSpec& spec) const = 0;
  // The formula, for a reader: "(p-1)/(m+p-1)".
  virtual const char* idle_share_formula() const = 0;
};

class PLAIT_SDK_VISIBLE PipelineSchedule : public Plugin {
 public:
  using Interface = PipelineSchedule;
  static constexpr const char* kKind = "pipeline";
  // v: virtual stages each rank holds (1 for non-interleaved schedules); asked after
  // configure().
  virtual int64_t stages_per_rank() const { return 1; }
  // The ordered actions of one pipeline rank for one optimizer step. Throw plait::Error
  // for a spec the schedule cannot serve (say which and what would).
  virtual std::vector<Action> actions(const ScheduleSpec& spec, int64_t pp_rank) const = 0;
};

}  // namespace plait
