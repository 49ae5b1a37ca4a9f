#pragma once
// Where parameters, gradients and optimizer state live across the data-parallel axis,
// and when they are synchronised. A data plugin owns the optimizer step.
//
// After configure() and setup(), the trainer calls, per optimizer step:
//   for each backward k of this rank:  before_microbatch(k); backward; after_backward(k)
//   step(args)
// in that fixed order. step() is the core's, not the plugin's: it asks the plugin for
// the global gradient norm, then for the update, or, when the norm or the step's loss is
// not finite, for nothing but dropping the gradients. So no plugin can let a diverged
// step touch the weights or the optimizer state, and every rank takes the same branch
// (the norm and the loss are global). Forwards run between them as the pipeline schedule says (without
// a pipeline: forward k just before backward k), so a plugin must not assume that the
// forward of microbatch k comes after before_microbatch(k). Under an interleaved schedule
// one backward covers one virtual stage's units only; the last one (is_last) is the
// last gradient contribution of every parameter. Loss is already normalised by the global token count, so a
// plugin sums gradients across ranks (it does not average them).
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "plait/sdk/communicator.hpp"
#include "plait/sdk/error.hpp"
#include "plait/sdk/grad_norm.hpp"
#include "plait/sdk/host_read.hpp"
#include "plait/sdk/model.hpp"
#include "plait/sdk/optim.hpp"
#include "plait/sdk/plugin.hpp"
#include "plait/sdk/state.hpp"

namespace plait {

class Offload;  // offload.hpp

struct PLAIT_ABI_GROWS MicrobatchInfo {
  int64_t index = 0;
  int64_t count = 1;
  bool is_last() const { return index + 1 == count; }
};

struct StepArgs {
  int64_t step = 1;         // AdamW's step: updates applied so far + 1
  double lr = 0.0;
  double grad_clip = 0.0;   // max global norm; 0 turns clipping off
  // The core's figures of the step on the device (float64), read with the norms in the
  // step's one device-to-host copy. The first is the global loss: a non-finite one
  // discards the step. Undefined: no figures.
  at::Tensor loss_figures;
  HostReader* reader = nullptr;  // the core's counting reader; null reads uncounted
};

struct StepResult {
  double grad_norm = 0.0;          // global gradient norm before clipping
  bool applied = true;             // false: the norm or the loss was not finite; nothing was updated
  bool grads_finite_here = true;   // this rank's own gradients were finite
  std::vector<double> loss_figures;  // StepArgs::loss_figures, read
};

// Bytes of model state this rank holds, split by where they live.
struct StateBytes {
  int64_t params = 0, grads = 0, optimizer = 0;                 // on the compute device
  int64_t host_params = 0, host_grads = 0, host_optimizer = 0;  // in host memory (offload)
};

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

struct PLAIT_ABI_GROWS DataParallelSetup {
  StageModel* model = nullptr;
  AdamWConfig adamw;
  Communicator* dp_group = nullptr;  // null in a single-process run
  GroupMaker* groups = nullptr;      // splits dp_group; null in a single-process run
  // train.dtype = bfloat16: compute in bf16 with fp32 master weights. The model arrives
  // in fp32 and runs under autocast; a sharding plugin may keep bf16 working copies.
  bool bf16 = false;
  Offload* offload = nullptr;        // the offload plugin, or null
  // Tensor parallel: parameters with a TensorSplit are slices; their squared norms are
  // summed over this group for the global norm (grad_norm.hpp). Parameters whose split
  // says partial_grad have their gradients summed over it after the step's last backward,
  // before full_gradients() or step() read them (partial_grads.hpp). Null without tp.
  Communicator* tp_group = nullptr;
  // Pipeline parallel: this rank holds some stages' parameters; squared norms are summed
  // over this group for the global norm. Null without a pipeline.
  Communicator* pp_group = nullptr;
};

class PLAIT_SDK_VISIBLE DataParallel : public Plugin {
 public:
  using Interface = DataParallel;
  static constexpr const char* kKind = "data";

  // Once, after configure() and before the first step: may wrap units, register gradient
  // hooks, shard state.
  virtual void setup(const DataParallelSetup& setup) = 0;
  virtual void before_microbatch(const MicrobatchInfo& mb) {}
  virtual void after_backward(const MicrobatchInfo& mb) {}

  // The optimizer step (see the top of this file). Not virtual: plugins implement the
  // three hooks below.
  StepResult step(const StepArgs& args) {
    const GradNorm norm = grad_norm();
    const at::Tensor host = read_step_figures(norm, args);
    const double* v = host.data_ptr<double>();
    StepResult result;
    result.grad_norm = std::sqrt(v[0]);
    result.grads_finite_here = std::isfinite(v[1]);
    result.loss_figures.assign(v + 2, v + host.numel());
    result.applied = std::isfinite(result.grad_norm) && (result.loss_figures.empty() || std::isfinite(v[2]));
    if (result.applied) {
      update({args.step, args.lr, clip_coefficient(result.grad_norm, args.grad_clip)});
    } else {
      discard_gradients();
    }
    return result;
  }

  // The whole gradient of every parameter, by reference name, after the last
  // after_backward of a step and before step() (the equivalence harness compares these).
  virtual NamedTensors full_gradients() = 0;
  // The whole value of every parameter, by reference name (checkpoints, the harness).
  virtual NamedTensors full_parameters() = 0;
  virtual StateBytes state_bytes() const = 0;

  // Checkpoints (state.hpp), between steps: this rank's parts of its state, and the state
  // loaded back (after setup, before the first step; every rank calls it, so a plugin may
  // communicate). Only plugins with the `checkpoint` capability are asked.
  virtual std::vector<StatePart> state_parts() {
    throw Error("this data plugin cannot save checkpoints", "it lacks the 'checkpoint' capability");
  }
  virtual void load_state(StateSource& source) {
    throw Error("this data plugin cannot load checkpoints", "it lacks the 'checkpoint' capability");
  }

 protected:
  // The global norm of the step's gradients: collective, the same on every rank.
  virtual GradNorm grad_norm() = 0;
  // Scale the gradients by clip_coef when it is below 1, update, clear the gradients.
  virtual void update(const UpdateArgs& args) = 0;
  // Clear the step's gradients; parameters and optimizer state stay as they are.
  virtual void discard_gradients() = 0;

 private:
  static at::Tensor read_step_figures(const GradNorm& norm, const StepArgs& args) {
    std::vector<at::Tensor> parts = {norm.squared.reshape({1}), norm.squared_here.reshape({1})};
    if (args.loss_figures.defined()) parts.push_back(args.loss_figures.reshape({-1}).to(norm.squared.device()));
    const at::Tensor values = at::cat(parts).to(at::kDouble);
    return args.reader != nullptr ? args.reader->read(values, "optimizer step") : values.cpu().contiguous();
  }
};

}  // namespace plait
