#include "pipeline/pipeline_executor.hpp"

#include <chrono>
#include <utility>

#include <ATen/ATen.h>

#include "memory/tracking_allocator.hpp"
#include "model/dropout.hpp"
#include "pipeline/schedule_check.hpp"
#include "plait/sdk/error.hpp"

namespace plait {
namespace {

using Clock = std::chrono::steady_clock;
using Key = std::pair<int64_t, int64_t>;  // (stage, microbatch)

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// One tag per boundary crossing within a step: the receiving stage, the microbatch and
// the direction, so that early receives match the right send.
int tag_of(bool gradient, int64_t receiving_stage, int64_t microbatch, const ScheduleSpec& spec) {
  return static_cast<int>(((gradient ? 1 : 0) * spec.stages() + receiving_stage) * spec.microbatches + microbatch);
}

struct PendingRecv {
  std::shared_ptr<Work> work;
  at::Tensor buffer;
};

}  // namespace

PipelineExecutor::PipelineExecutor(ExecutorSetup setup) : s_(std::move(setup)) {
  for (std::size_t k = 0; k < s_.actions.size(); ++k) {
    if (s_.actions[k].type != ActionType::backward) continue;
    ++backwards_;
    last_backward_of_[s_.actions[k].stage] = k;
  }
  for (const auto& [stage, k] : last_backward_of_) {
    PLAIT_CHECK(s_.units_of.count(stage) != 0, concat("the schedule runs stage ", stage, " on a rank that lacks it"), "");
  }
}

ScheduleOutcome PipelineExecutor::run(const std::vector<Batch>& batches, double tokens, StepRequests requests) {
  const int64_t last_stage = s_.spec.stages() - 1;
  const int64_t pp = s_.spec.pp;
  PLAIT_CHECK(static_cast<int64_t>(batches.size()) == s_.spec.microbatches,
              concat("the schedule is for ", s_.spec.microbatches, " microbatches, the step has ", batches.size()), "");
  ScheduleOutcome out;
  std::map<Key, at::Tensor> inputs, outputs, input_grads;
  std::map<Key, PendingRecv> activations_in, grads_in;
  std::map<Key, int64_t> held_bytes;
  int64_t held_now = 0;
  std::vector<std::pair<std::shared_ptr<Work>, at::Tensor>> sends;

  auto barrier = [&](const char* phase) {
    if (s_.pp_group == nullptr) return;
    CommOptions o;
    o.tag = {"core", phase, "", -1};
    s_.pp_group->barrier(o)->wait();
  };
  auto p2p = [&](int64_t peer_stage, int tag, const char* phase, int64_t mb) {
    PointToPointOptions o;
    o.peer = static_cast<int>(rank_of_stage(peer_stage, pp));
    o.tag_id = tag;
    o.tag = {"core", phase, concat("stage ", peer_stage), mb};
    return o;
  };
  auto boundary_buffer = [&](int64_t mb) {
    const auto& ids = batches[static_cast<std::size_t>(mb)].inputs;
    const int64_t positions = ids.size(1) / s_.factory->sequence_shards();  // a sequence-parallel part
    return at::empty({ids.size(0), positions, s_.hidden}, at::TensorOptions().dtype(s_.activation_dtype).device(s_.device));
  };
  barrier("pipeline-start");
  const auto t0 = Clock::now();
  auto since_start_us = [&](Clock::time_point t) { return std::chrono::duration<double, std::micro>(t - t0).count(); };
  auto record = [&](const Action& a, Clock::time_point started) {
    if (requests.keep_timeline) out.timeline.push_back({a, since_start_us(started), since_start_us(Clock::now())});
  };
  auto take = [&](std::map<Key, PendingRecv>& from, const Key& key, ActionType recv) {
    auto it = from.find(key);
    PendingRecv r = std::move(it->second);
    from.erase(it);
    const auto waited = Clock::now();
    r.work->wait();
    record({recv, key.first, key.second}, waited);
    return r.buffer;
  };
  int64_t backward_index = 0;
  for (std::size_t k = 0; k < s_.actions.size(); ++k) {
    const Action& a = s_.actions[k];
    const Key key{a.stage, a.microbatch};
    const Batch& batch = batches[static_cast<std::size_t>(a.microbatch)];
    switch (a.type) {
      case ActionType::forward: {
        at::Tensor x;
        if (a.stage == 0) {
          x = batch.inputs.to(s_.device);
        } else {
          x = take(activations_in, key, ActionType::recv_activation);
          x.requires_grad_(true);
          inputs[key] = x;
        }
        const auto started = Clock::now();
        const int64_t before = cpu_memory_stats().current_bytes;
        at::Tensor h = x;
        {
          AutocastScope autocast(s_.precision, s_.device.type());
          DropoutScope samples(DropoutStream{s_.seed, batch.first_sample});
          for (std::size_t u : s_.units_of.at(a.stage)) h = s_.model->units[u].unit->forward(h);
        }
        if (a.stage == last_stage) {
          if (requests.keep_first_logits && a.microbatch == 0) out.first_logits = s_.factory->whole_logits(h.detach());
          at::Tensor loss_sum = s_.factory->token_loss_sum(h, batch.targets.to(s_.device));
          out.loss_sum += loss_sum.item<double>();
          outputs[key] = loss_sum / tokens;
        } else {
          outputs[key] = h.scalar_type() == s_.activation_dtype ? h : h.to(s_.activation_dtype);
        }
        held_bytes[key] = cpu_memory_stats().current_bytes - before;
        held_now += held_bytes[key];
        out.activation_bytes = std::max(out.activation_bytes, held_now);
        out.busy_s += seconds_since(started);
        record(a, started);
        break;
      }
      case ActionType::backward: {
        at::Tensor grad;
        if (a.stage != last_stage) grad = take(grads_in, key, ActionType::recv_grad);
        const MicrobatchInfo mb{backward_index++, backwards_};
        const bool last_of_stage = last_backward_of_.at(a.stage) == k;
        if (s_.tied) s_.tied->before_backward(a.stage, last_of_stage);
        const auto started = Clock::now();
        s_.dp->before_microbatch(mb);
        at::Tensor y = outputs.at(key);
        outputs.erase(key);
        if (grad.defined()) {
          y.backward(grad);
        } else {
          y.backward();
        }
        s_.dp->after_backward(mb);
        out.busy_s += seconds_since(started);
        record(a, started);
        if (s_.tied) s_.tied->after_backward(a.stage, last_of_stage);
        held_now -= held_bytes[key];
        if (a.stage > 0) {
          input_grads[key] = inputs.at(key).grad();
          inputs.erase(key);
        }
        break;
      }
      case ActionType::send_activation: {
        at::Tensor t = outputs.at(key).detach().contiguous();
        sends.emplace_back(s_.pp_group->send(t, p2p(a.stage + 1, tag_of(false, a.stage + 1, a.microbatch, s_.spec),
                                                    "send-activation", a.microbatch)),
                           t);
        break;
      }
      case ActionType::recv_activation: {
        PendingRecv r{nullptr, boundary_buffer(a.microbatch)};
        r.work = s_.pp_group->recv(r.buffer, p2p(a.stage - 1, tag_of(false, a.stage, a.microbatch, s_.spec),
                                                 "recv-activation", a.microbatch));
        activations_in[key] = std::move(r);
        break;
      }
      case ActionType::send_grad: {
        auto it = input_grads.find(key);
        at::Tensor t = it->second.defined() ? it->second.contiguous() : at::zeros_like(boundary_buffer(a.microbatch));
        input_grads.erase(it);
        sends.emplace_back(s_.pp_group->send(t, p2p(a.stage - 1, tag_of(true, a.stage - 1, a.microbatch, s_.spec),
                                                    "send-grad", a.microbatch)),
                           t);
        break;
      }
      case ActionType::recv_grad: {
        PendingRecv r{nullptr, boundary_buffer(a.microbatch)};
        r.work = s_.pp_group->recv(r.buffer, p2p(a.stage + 1, tag_of(true, a.stage, a.microbatch, s_.spec), "recv-grad",
                                                 a.microbatch));
        grads_in[key] = std::move(r);
        break;
      }
      case ActionType::weight_grad:
        throw Error(concat("the schedule asks for ", describe(a), ", which this core does not run"), "");
    }
  }
  for (auto& [work, tensor] : sends) work->wait();
  barrier("pipeline-end");
  out.span_s = seconds_since(t0);
  return out;
}

}  // namespace plait
