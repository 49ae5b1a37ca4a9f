#pragma once
// One rank's model and plugins, built in the interfaces' fixed order (as torchtitan's
// parallelize_llama applies tensor parallel, then activation checkpointing, then data
// parallel): layer factory -> model -> this rank's pipeline stages -> tied parameters
// -> activation checkpointing -> offload -> data parallel -> the schedule's executor.
#include <map>
#include <memory>
#include <string>

#include "checkpoint/state_layout.hpp"
#include "metrics/device_gauges.hpp"
#include "metrics/metrics_writer.hpp"
#include "model/precision.hpp"
#include "pipeline/pipeline_executor.hpp"
#include "pipeline/stage_partition.hpp"
#include "pipeline/tied_parameters.hpp"
#include "plait/sdk/adapter.hpp"
#include "plait/sdk/data_parallel.hpp"
#include "plait/sdk/offload.hpp"
#include "plait/sdk/tensor_parallel.hpp"
#include "loader/plugin_instance.hpp"
#include "train/host_reads.hpp"
#include "train/run_plan.hpp"

namespace plait {

struct Rank {
  Precision precision;
  at::Device device{at::kCPU};
  StepMetrics metrics;          // what the plugins report per step; they hold pointers into it
  DeviceGauges device_gauges;   // what they leave on the device, read with the step's one read
  PluginInstance<TensorParallel> tensor;
  PluginInstance<Adapter> adapter;  // its layers live in the stages: destroyed after them
  std::shared_ptr<LayerFactory> factory;
  RankStages stages;
  std::map<std::string, TensorSplit> splits;  // to reassemble whole tensors from tp slices
  std::map<std::string, checkpoint::LocalLayout> layouts;  // this rank's parameters, for its checkpoint parts
  std::unique_ptr<TiedParameters> tied;
  PluginInstance<Offload> offload;
  PluginInstance<DataParallel> dp;
  std::unique_ptr<PipelineExecutor> executor;
  CountingReader host_reads;  // every device-to-host read the core makes
};

// Collective over every rank (data plugins broadcast or shard their state).
std::unique_ptr<Rank> build_rank(const RunPlan& plan);

// Whole tensors by reference name from this rank's part of them: tp slices joined, then
// every pipeline stage's gathered on the first dp and tp rank of pipeline rank 0 (others
// get their own back). Collective over tp and pp.
NamedTensors gather_whole(const RunPlan& plan, const Rank& rank, const NamedTensors& local);

}  // namespace plait
