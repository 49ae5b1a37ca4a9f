#include "pipeline/pipeline_executor.hpp"

#include <chrono>
#include <utility>

#include <ATen/ATen.h>

#include "data/batch_upload.hpp"
#include "debug/plugin_call.hpp"
#include "memory/rank_memory.hpp"
#include "model/document_layout.hpp"
#include "model/dropout.hpp"
#include "pipeline/schedule_check.hpp"
#include "pipeline/transfer_groups.hpp"
#include "plait/sdk/error.hpp"
#include "pipeline/chrome_trace.hpp"
#include "pipeline/unit_backward_trace.hpp"
#include "timing/phase_clock.hpp"
#include "timing/trace_recorder.hpp"

namespace plait {
namespace {

using Clock = std::chrono::steady_clock;
using Key = std::pair<int64_t, int64_t>;  // (stage, microbatch)

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// One tag per boundary crossing within a step.
int tag_of(bool gradient, int64_t receiving_stage, int64_t microbatch, const ScheduleSpec& spec) {
  return static_cast<int>(((gradient ? 1 : 0) * spec.stages() + receiving_stage) * spec.microbatches + microbatch);
}

struct PendingRecv {
  std::shared_ptr<Work> work;
  at::Tensor buffer;
};

// One step's play of this rank's actions: what its forwards keep for their backwards,
// the receives in flight, the sends to finish, and the figures of the step.
class StepPlay {
 public:
  StepPlay(const ExecutorSetup& s, const std::vector<Batch>& batches, const at::Tensor& tokens,
           const StepRequests& requests,
           int64_t backwards, const std::map<int64_t, std::size_t>& last_backward_of)
      : s_(s), batches_(batches), tokens_(tokens), requests_(requests), backwards_(backwards),
        last_backward_of_(last_backward_of) {}

  ScheduleOutcome play() {
    out_.loss_sum = at::zeros({}, at::TensorOptions().dtype(at::kDouble).device(s_.device));
    barrier("pipeline-start");
    t0_ = Clock::now();
    for (std::size_t k = 0; k < s_.actions.size();) {
      if (is_transfer(s_.actions[k].type)) {
        const std::size_t end = transfer_group_end(s_.actions, k);
        post_group(k, end);
        k = end;
      } else {
        act(k, s_.actions[k]);
        ++k;
      }
    }
    if (!sends_.empty()) {
      const PhaseScope idle(Phase::pipeline_idle);  // until the next stage has taken what this one sent
      for (auto& [work, tensor] : sends_) work->wait();
    }
    barrier("pipeline-end");
    out_.span_s = seconds_since(t0_);
    return std::move(out_);
  }

 private:
  void act(std::size_t k, const Action& a) {
    switch (a.type) {
      case ActionType::forward: return forward(a);
      case ActionType::backward: return backward(a, k);
      case ActionType::weight_grad:
        throw Error(concat("the schedule asks for ", describe(a), ", which this core does not run"), "");
      default: PLAIT_CHECK(false, concat(describe(a), " is not a compute action"), "");
    }
  }

  void forward(const Action& a) {
    const Key key{a.stage, a.microbatch};
    const Batch& batch = batches_[static_cast<std::size_t>(a.microbatch)];
    at::Tensor x;
    if (a.stage == 0) {
      x = batch.inputs;  // on the device since the step began (batches_on)
    } else {
      x = take(activations_in_, key, ActionType::recv_activation);
      x.requires_grad_(true);
      inputs_[key] = x;
    }
    const PhaseScope timed(Phase::forward);
    const auto started = Clock::now();
    const HeldSince held(s_.device);
    at::Tensor h = x;
    {
      AutocastScope autocast(s_.precision, s_.device.type());
      DropoutScope samples(DropoutStream{s_.seed, batch.first_sample});
      DocumentScope documents(batch.documents.defined()
                                  ? std::optional(DocumentLayout::of(batch.documents, batch.positions, s_.device,
                                                                     batch.document_starts, batch.longest_document))
                                  : std::nullopt);
      for (std::size_t u : s_.units_of.at(a.stage)) h = forward_unit(u, a, h);
    }
    if (a.stage == s_.spec.stages() - 1) {
      if (requests_.keep_first_logits && a.microbatch == 0) out_.first_logits = s_.factory->whole_logits(h.detach());
      at::Tensor loss_sum = s_.factory->token_loss_sum(h, batch.targets);
      out_.loss_sum += loss_sum.detach().to(at::kDouble);  // on the device: the host reads it once per step
      outputs_[key] = loss_sum / tokens_;
    } else {
      outputs_[key] = h.scalar_type() == s_.activation_dtype ? h : h.to(s_.activation_dtype);
    }
    held_bytes_[key] = held.bytes();
    held_now_ += held_bytes_[key];
    out_.activation_bytes = std::max(out_.activation_bytes, held_now_);
    count_busy(a, started);
  }

  at::Tensor forward_unit(std::size_t u, const Action& a, const at::Tensor& h) {
    const UnitSlot& slot = s_.model->units[u];
    if (TraceRecorder::recording() == nullptr) return slot.unit->forward(h);
    const std::string name = slot.prefix.empty() ? "unit" : slot.prefix;
    at::Tensor out;
    {
      const TraceSpan span("unit", concat(short_label(a, s_.spec), " ", name));
      out = slot.unit->forward(h);
    }
    unit_backwards_.watch({a.stage, a.microbatch},
                          concat(short_label({ActionType::backward, a.stage, a.microbatch}, s_.spec), " ", name), out);
    return out;
  }

  void backward(const Action& a, std::size_t k) {
    const Key key{a.stage, a.microbatch};
    at::Tensor grad;
    if (a.stage != s_.spec.stages() - 1) grad = take(grads_in_, key, ActionType::recv_grad);
    const MicrobatchInfo mb{backward_index_++, backwards_};
    const bool last_of_stage = last_backward_of_.at(a.stage) == k;
    const PhaseScope timed(Phase::backward);
    if (s_.tied) s_.tied->before_backward(a.stage, last_of_stage);
    const auto started = Clock::now();
    call_plugin(s_.dp_name, "before_microbatch", [&] { s_.dp->before_microbatch(mb); });
    at::Tensor y = outputs_.at(key);
    outputs_.erase(key);
    if (!y.requires_grad()) {
      // The first stage with every parameter frozen ([train] freeze): nothing to compute.
    } else if (grad.defined()) {
      y.backward(grad);
    } else {
      y.backward();
    }
    unit_backwards_.emit(key, Clock::now());
    call_plugin(s_.dp_name, "after_backward", [&] { s_.dp->after_backward(mb); });
    count_busy(a, started);
    if (s_.tied) s_.tied->after_backward(a.stage, last_of_stage);
    held_now_ -= held_bytes_[key];
    if (a.stage > 0) {
      input_grads_[key] = inputs_.at(key).grad();
      inputs_.erase(key);
    }
  }

  // The actions [first, end) as one group: sends keep their tensor until the step's end,
  // when every send is waited for; a receive is waited for by the compute that needs it.
  void post_group(std::size_t first, std::size_t end) {
    std::vector<PointToPoint> ops;
    for (std::size_t k = first; k < end; ++k) ops.push_back(transfer(s_.actions[k]));
    std::vector<std::shared_ptr<Work>> works = s_.pp_group->batch_p2p(ops);
    for (std::size_t k = first; k < end; ++k) {
      const Action& a = s_.actions[k];
      PointToPoint& op = ops[k - first];
      if (is_send(a.type)) {
        sends_.emplace_back(std::move(works[k - first]), std::move(op.tensor));
      } else {
        auto& into = a.type == ActionType::recv_activation ? activations_in_ : grads_in_;
        into[{a.stage, a.microbatch}] = PendingRecv{std::move(works[k - first]), std::move(op.tensor)};
      }
    }
  }

  // Tags name the receiving stage, the microbatch and the direction, so that backends
  // that match by tag pair an early receive with the right send.
  PointToPoint transfer(const Action& a) {
    const Key key{a.stage, a.microbatch};
    const int64_t peer = peer_stage(a);
    switch (a.type) {
      case ActionType::send_activation:
        return {PointToPoint::Kind::send, outputs_.at(key).detach().contiguous(),
                p2p(peer, tag_of(false, peer, a.microbatch, s_.spec), "send-activation", a.microbatch)};
      case ActionType::send_grad: {
        auto it = input_grads_.find(key);
        at::Tensor t = it->second.defined() ? it->second.contiguous() : at::zeros_like(boundary_buffer(a.microbatch));
        input_grads_.erase(it);
        return {PointToPoint::Kind::send, t, p2p(peer, tag_of(true, peer, a.microbatch, s_.spec), "send-grad", a.microbatch)};
      }
      case ActionType::recv_activation:
        return {PointToPoint::Kind::recv, boundary_buffer(a.microbatch),
                p2p(peer, tag_of(false, a.stage, a.microbatch, s_.spec), "recv-activation", a.microbatch)};
      default:
        return {PointToPoint::Kind::recv, boundary_buffer(a.microbatch),
                p2p(peer, tag_of(true, a.stage, a.microbatch, s_.spec), "recv-grad", a.microbatch)};
    }
  }

  at::Tensor take(std::map<Key, PendingRecv>& from, const Key& key, ActionType recv) {
    auto it = from.find(key);
    PendingRecv r = std::move(it->second);
    from.erase(it);
    const auto waited = Clock::now();
    {
      const PhaseScope idle(Phase::pipeline_idle);
      r.work->wait();
    }
    record({recv, key.first, key.second}, waited);
    return r.buffer;
  }

  void barrier(const char* phase) {
    if (s_.pp_group == nullptr || !requests_.time_span) return;
    const PhaseScope idle(Phase::pipeline_idle);
    CommOptions o;
    o.tag = {"core", phase, "", -1};
    s_.pp_group->barrier(o)->wait();
  }

  PointToPointOptions p2p(int64_t peer_stage, int tag, const char* phase, int64_t mb) const {
    PointToPointOptions o;
    o.peer = static_cast<int>(rank_of_stage(peer_stage, s_.spec.pp));
    o.tag_id = tag;
    o.tag = {"core", phase, concat("stage ", peer_stage), mb};
    return o;
  }

  at::Tensor boundary_buffer(int64_t mb) const {
    const auto& ids = batches_[static_cast<std::size_t>(mb)].inputs;
    const int64_t positions = ids.size(1) / s_.factory->sequence_shards();  // a sequence-parallel part
    return at::empty({ids.size(0), positions, s_.hidden}, at::TensorOptions().dtype(s_.activation_dtype).device(s_.device));
  }

  // A forward, a backward or a wait for a receive, on the trace of a traced step.
  // One end time for the busy figure and the trace's span, so that the two agree even when
  // the rank is descheduled between reading the clock twice (CI: 29 ms traced, 22 reported).
  void count_busy(const Action& a, Clock::time_point started) {
    const Clock::time_point ended = Clock::now();
    out_.busy_s += std::chrono::duration<double>(ended - started).count();
    record(a, started, ended);
  }

  void record(const Action& a, Clock::time_point started, Clock::time_point ended = Clock::now()) {
    TraceRecorder* trace = TraceRecorder::recording();
    if (trace == nullptr) return;
    const bool compute = a.type == ActionType::forward || a.type == ActionType::backward;
    trace->span(TraceTrack::compute, compute ? short_label(a, s_.spec) : concat("wait ", action_name(a.type)),
                compute ? action_name(a.type) : "wait", started, ended,
                {{"stage", a.stage}, {"microbatch", a.microbatch}});
  }

  const ExecutorSetup& s_;
  const std::vector<Batch>& batches_;
  const at::Tensor tokens_;
  const StepRequests requests_;
  const int64_t backwards_;
  const std::map<int64_t, std::size_t>& last_backward_of_;
  ScheduleOutcome out_;
  Clock::time_point t0_;
  std::map<Key, at::Tensor> inputs_, outputs_, input_grads_;
  std::map<Key, PendingRecv> activations_in_, grads_in_;
  UnitBackwardTrace unit_backwards_;
  std::map<Key, int64_t> held_bytes_;
  int64_t held_now_ = 0;
  int64_t backward_index_ = 0;
  std::vector<std::pair<std::shared_ptr<Work>, at::Tensor>> sends_;
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

ScheduleOutcome PipelineExecutor::run(const std::vector<Batch>& batches, const at::Tensor& tokens,
                                     StepRequests requests) {
  PLAIT_CHECK(static_cast<int64_t>(batches.size()) == s_.spec.microbatches,
              concat("the schedule is for ", s_.spec.microbatches, " microbatches, the step has ", batches.size()), "");
  const StageReads reads{s_.units_of.count(0) != 0, s_.units_of.count(s_.spec.stages() - 1) != 0};
  const std::vector<Batch> on_device = batches_on(batches, s_.device, reads);
  return StepPlay(s_, on_device, tokens, requests, backwards_, last_backward_of_).play();
}

}  // namespace plait
