#pragma once
// Runs one rank's schedule (pipeline.hpp) for one optimizer step: forwards and
// backwards of its virtual stages, activations and their gradients over the pipeline
// group, the data plugin's per-backward calls, and the loss on the last stage. Without
// a pipeline the schedule is forward then backward of each microbatch in turn, so every
// run, pipelined or not, goes through here.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "data/sampler.hpp"
#include "pipeline/tied_parameters.hpp"
#include "plait/sdk/communicator.hpp"
#include "plait/sdk/data_parallel.hpp"
#include "plait/sdk/layers.hpp"
#include "plait/sdk/pipeline.hpp"
#include "model/precision.hpp"

namespace plait {

struct ExecutorSetup {
  const StageModel* model = nullptr;                    // this rank's units, wrapped by the data plugin
  std::map<int64_t, std::vector<std::size_t>> units_of;  // virtual stage -> indices into model->units
  ScheduleSpec spec;
  std::vector<Action> actions;       // this rank's
  Communicator* pp_group = nullptr;  // null when pp = 1
  DataParallel* dp = nullptr;
  std::string dp_name;  // its plugin's name, for what goes wrong in its hooks
  LayerFactory* factory = nullptr;   // made the model: its loss takes what its head returns
  TiedParameters* tied = nullptr;    // may be null
  Precision precision;
  at::Device device{at::kCPU};
  at::ScalarType activation_dtype = at::kFloat;  // what crosses stage boundaries
  int64_t hidden = 0;                            // activation shape [B, T / factory->sequence_shards(), hidden]
  uint64_t seed = 0;                             // the run's: keys the dropout masks with the samples' ids
};

struct ScheduleOutcome {
  at::Tensor loss_sum;           // sum of token losses, float64 on the device; 0 on ranks without the last stage
  int64_t activation_bytes = 0;  // most bytes held at once by forwards awaiting their backward
  double busy_s = 0.0;           // in forwards and backwards
  double span_s = 0.0;           // from every pipeline rank's start to every rank's end
  at::Tensor first_logits;       // microbatch 0's whole logits, when asked for and this rank has the last stage
};

struct StepRequests {
  // Collective over the tensor-parallel group (vocabulary slices are gathered): every tp
  // rank of the last stage passes the same.
  bool keep_first_logits = false;
  // Barriers over the pipeline group around the schedule, so that every stage's span is
  // the same interval and the bubble is comparable: only on steps whose figures are
  // recorded, since each stalls the device stream.
  bool time_span = true;
};

class PipelineExecutor {
 public:
  explicit PipelineExecutor(ExecutorSetup setup);
  // `tokens`: the global batch's count of targets that count (a 0-dim float64 tensor on
  // the device, so that the host never waits for it), by which every microbatch's loss
  // is divided.
  ScheduleOutcome run(const std::vector<Batch>& batches, const at::Tensor& tokens, StepRequests requests = {});

 private:
  ExecutorSetup s_;
  int64_t backwards_ = 0;                      // per step
  std::map<int64_t, std::size_t> last_backward_of_;  // stage -> index in actions
};

}  // namespace plait
