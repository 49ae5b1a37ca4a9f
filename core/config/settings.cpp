#include "config/settings.hpp"

#include "plait/sdk/options.hpp"

namespace plait {

TrainSettings TrainSettings::from(const Options& t) {
  TrainSettings s;
  s.steps = t.get<int64_t>("steps");
  s.lr = t.get<double>("lr");
  s.lr_schedule = t.get<std::string>("lr_schedule");
  s.warmup_steps = t.get<int64_t>("warmup_steps");
  s.min_lr_ratio = t.get<double>("min_lr_ratio");
  s.weight_decay = t.get<double>("weight_decay");
  s.beta1 = t.get<double>("beta1");
  s.beta2 = t.get<double>("beta2");
  s.eps = t.get<double>("eps");
  s.grad_clip = t.get<double>("grad_clip");
  s.grad_accum = t.get<int64_t>("grad_accum");
  s.dtype = t.get<std::string>("dtype");
  s.seed = t.get<int64_t>("seed");
  s.peak_flops = t.get<double>("peak_flops");
  s.threads = t.get<int64_t>("threads");
  s.device = t.get<std::string>("device");
  s.memory_limit_mb = t.get<double>("memory_limit_mb");
  s.cache_freed_blocks = t.get<bool>("cache_freed_blocks");
  s.activation_checkpointing = t.get<std::string>("activation_checkpointing");
  s.on_nonfinite = t.get<std::string>("on_nonfinite");
  s.nonfinite_skip_limit = t.get<int64_t>("nonfinite_skip_limit");
  s.tensorboard = t.get<bool>("tensorboard");
  s.log_every = t.get<int64_t>("log_every");
  s.phase_timing = t.get<bool>("phase_timing");
  s.rank_metrics = t.get<std::string>("rank_metrics");
  return s;
}

DataSettings DataSettings::from(const Options& d) {
  DataSettings s;
  s.source = d.get<std::string>("source");
  s.path = d.find<std::string>("path");
  s.order = d.get<std::string>("order");
  s.micro_batch_size = d.get<int64_t>("micro_batch_size");
  s.seq_len = d.find<int64_t>("seq_len");
  return s;
}

ParallelSettings ParallelSettings::from(const Options& p) {
  ParallelSettings s;
  s.data = p.get<std::string>("data");
  s.pipeline = p.get<std::string>("pipeline");
  s.tensor = p.get<std::string>("tensor");
  s.offload = p.get<std::string>("offload");
  s.adapter = p.get<std::string>("adapter");
  s.comm = p.get<std::string>("comm");
  s.stage_blocks = p.get<std::vector<int64_t>>("stage_blocks");
  s.dp = p.get<int64_t>("dp");
  s.pp = p.get<int64_t>("pp");
  s.tp = p.get<int64_t>("tp");
  return s;
}

CheckpointSettings CheckpointSettings::from(const Options& c) {
  CheckpointSettings s;
  s.every = c.get<int64_t>("every");
  s.keep_last = c.get<int64_t>("keep_last");
  s.async = c.get<bool>("async");
  s.final = c.get<bool>("final");
  s.final_is_default = c.is_default("final");
  s.resume = c.get<std::string>("resume");
  s.allow_batch_change = c.get<bool>("allow_batch_change");
  s.save_init = c.get<bool>("save_init");
  s.save_final = c.get<bool>("save_final");
  return s;
}

DebugSettings DebugSettings::from(const Options& d) {
  DebugSettings s;
  s.dump_logits = d.get<bool>("dump_logits");
  s.dump_grads = d.get<bool>("dump_grads");
  s.trace_steps = d.get<std::vector<int64_t>>("trace_steps");
  s.nonfinite_step = d.get<int64_t>("nonfinite_step");
  s.nonfinite_rank = d.get<int64_t>("nonfinite_rank");
  s.slow_ms = d.get<double>("slow_ms");
  s.slow_rank = d.get<int64_t>("slow_rank");
  s.faults = d.get<std::vector<std::string>>("faults");
  s.count_host_syncs = d.get<bool>("count_host_syncs");
  s.count_wire_bytes = d.get<bool>("count_wire_bytes");
  return s;
}

DistributedSettings DistributedSettings::from(const Options& d) {
  DistributedSettings s;
  s.rendezvous_timeout_s = d.get<double>("rendezvous_timeout_s");
  s.collective_timeout_s = d.get<double>("collective_timeout_s");
  s.hang_warning_s = d.get<double>("hang_warning_s");
  s.flight_recorder_ops = d.get<int64_t>("flight_recorder_ops");
  s.bind_cores = d.get<bool>("bind_cores");
  s.max_restarts = d.get<int64_t>("max_restarts");
  return s;
}

}  // namespace plait
