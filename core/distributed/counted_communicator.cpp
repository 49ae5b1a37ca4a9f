#include "distributed/counted_communicator.hpp"

#include <cctype>
#include <chrono>
#include <cstdio>
#include <functional>

#include "debug/exception_text.hpp"
#include "debug/fault_injector.hpp"
#include "plait/sdk/error.hpp"
#include "timing/phase_clock.hpp"
#include "timing/trace_recorder.hpp"
#include "util/human_bytes.hpp"

namespace plait {
namespace {

// An operation issued while a traced step runs: what its trace event needs at completion.
struct TracedOp {
  TraceRecorder* recorder = nullptr;
  uint64_t collective = 0;  // its async event, for a collective
  bool p2p = false, is_send = false;
  int from = 0, to = 0, tag = 0;  // global ranks, message tag
  std::string name;
  nlohmann::json args;
  TraceRecorder::Clock::time_point issued;

  // Once, when the operation is seen complete.
  void done() {
    if (recorder == nullptr) return;
    const auto now = TraceRecorder::Clock::now();
    if (p2p) {
      recorder->transfer(is_send, from, to, tag, name, std::move(args), issued, now);
    } else {
      recorder->collective_done(collective, now);
    }
    recorder = nullptr;
  }
};

// The dtype as configs and reports name it (c10's own names are "Float", "Double", ...).
const char* dtype_name(at::ScalarType type) {
  switch (type) {
    case at::kFloat: return "float32";
    case at::kDouble: return "float64";
    case at::kBFloat16: return "bfloat16";
    case at::kHalf: return "float16";
    case at::kLong: return "int64";
    case at::kInt: return "int32";
    case at::kByte: return "uint8";
    case at::kBool: return "bool";
    default: return c10::toString(type);
  }
}

// Its place in the flight recorder's ring.
struct FlightMark {
  FlightRecorder* recorder = nullptr;
  uint64_t handle = 0;
};

class CountedWork final : public Work {
 public:
  CountedWork(std::shared_ptr<Work> inner, uint64_t id, CommStats& stats, std::string key, std::string description,
              bool on_cpu, TracedOp traced, FlightMark flight, int rank)
      : inner_(std::move(inner)), id_(id), stats_(stats), key_(std::move(key)), description_(std::move(description)),
        on_cpu_(on_cpu), traced_(std::move(traced)), flight_(flight), rank_(rank) {}
  ~CountedWork() override { traced_.done(); }

  bool is_completed() override {
    const bool done = inner_->is_completed();
    if (done) {
      stats_.complete(id_, inner_->device_seconds());
      traced_.done();
      flight_.recorder->completed(flight_.handle);
    }
    return done;
  }
  // The host's time in here is the exposed time (the step's comm_exposed phase, unless
  // a phase that absorbs it is open: a pipeline's wait for its peer is idle time); on a
  // GPU the operation may still be running when it returns, and the stats keep it until
  // the device says it is done.
  void wait(std::chrono::milliseconds timeout) override {
    const PhaseScope exposed(Phase::comm_exposed, key_);
    const auto started = std::chrono::steady_clock::now();
    flight_.recorder->started(flight_.handle);
    try {
      inner_->wait(timeout);
    } catch (const std::exception& e) {
      stats_.complete(id_);
      traced_.done();
      flight_.recorder->failed(flight_.handle);
      throw failure(exception_first_line(e), std::chrono::steady_clock::now() - started);
    }
    const double blocked = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    traced_.done();  // what the host saw: on a GPU the kernel may still run
    // A CPU operation is done when its wait returns, whatever its Work says (gloo's
    // reduce-scatter reports itself incomplete for a while after).
    if (on_cpu_) {
      flight_.recorder->completed(flight_.handle);
      stats_.complete(id_, inner_->device_seconds(), blocked);
      return;
    }
    // On a GPU the wait only ordered the stream: the flight record stays "started" (the
    // rank is in it) until the work itself says it is done, or a hang on the device would
    // read as completed.
    stats_.waited(id_, blocked,
                  HeldOp{.is_completed = [w = inner_, flight = flight_] {
                           const bool done = w->is_completed();
                           if (done) flight.recorder->completed(flight.handle);
                           return done;
                         },
                         .device_seconds = [w = inner_] { return w->device_seconds(); }});
  }
  std::exception_ptr exception() override { return inner_->exception(); }

  std::optional<double> device_seconds() override { return inner_->device_seconds(); }

 private:
  // gloo says only "Operation timed out!" (or "Timed out waiting 300000ms for recv"): not
  // which rank waited, in which operation, or which setting bounds the wait.
  Error failure(const std::string& said, std::chrono::steady_clock::duration waited) const {
    std::string lower = said;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower.find("timed out") == std::string::npos && lower.find("timeout") == std::string::npos) {
      return Error(concat(description_, " failed: ", said),
                   "a peer may have died or be stuck elsewhere: see the other ranks' logs");
    }
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%.1f", std::chrono::duration<double>(waited).count());
    return Error(concat(description_, " timed out on rank ", rank_, " after ", seconds,
                        " s, the limit [distributed] collective_timeout_s sets: a peer of the group never joined it"),
                 "a peer may have died, hung, or be waiting in another operation (`plait debug RUN` names it from the "
                 "ranks' flight records); if the step is only slow, raise [distributed] collective_timeout_s");
  }

  std::shared_ptr<Work> inner_;
  uint64_t id_;
  CommStats& stats_;
  std::string key_;  // "<axis>.<op>"
  std::string description_;
  bool on_cpu_;
  TracedOp traced_;
  FlightMark flight_;
  int rank_;  // global: the rank whose wait this is
};

class CountedCommunicator final : public Communicator {
 public:
  CountedCommunicator(std::shared_ptr<Communicator> inner, std::string axis, std::string group, std::vector<int> ranks,
                      CommStats& stats, FlightRecorder& flight, const at::Device& device, bool ends_at_wait,
                      const std::atomic<FaultInjector*>* faults)
      : inner_(std::move(inner)), axis_(std::move(axis)), group_(std::move(group)), ranks_(std::move(ranks)),
        stats_(stats), flight_(flight), device_(device), on_cpu_(ends_at_wait), faults_(faults) {
    flight_.add_group(group_, ranks_);
  }

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string backend() const override { return inner_->backend(); }

  std::shared_ptr<Work> all_reduce(at::Tensor& t, const AllReduceOptions& o) override {
    on_device("all_reduce", t, o.tag);
    return run("all_reduce", t, bytes(t), o.tag, [&] { return inner_->all_reduce(t, o); });
  }
  std::shared_ptr<Work> reduce_scatter(at::Tensor& out, const at::Tensor& in, const ReduceScatterOptions& o) override {
    on_device("reduce_scatter", in, o.tag, "input");
    on_device("reduce_scatter", out, o.tag, "output");
    return run("reduce_scatter", in, bytes(in), o.tag, [&] { return inner_->reduce_scatter(out, in, o); });
  }
  std::shared_ptr<Work> all_gather(at::Tensor& out, const at::Tensor& in, const CommOptions& o) override {
    on_device("all_gather", in, o.tag, "input");
    on_device("all_gather", out, o.tag, "output");
    return run("all_gather", out, bytes(out), o.tag, [&] { return inner_->all_gather(out, in, o); });
  }
  std::shared_ptr<Work> broadcast(at::Tensor& t, const BroadcastOptions& o) override {
    on_device("broadcast", t, o.tag);
    return run("broadcast", t, bytes(t), o.tag, [&] { return inner_->broadcast(t, o); });
  }
  std::shared_ptr<Work> send(const at::Tensor& t, const PointToPointOptions& o) override {
    on_device("send", t, o.tag);
    return run("send", t, bytes(t), o.tag, [&] { return inner_->send(t, o); }, &o);
  }
  std::shared_ptr<Work> recv(at::Tensor& t, const PointToPointOptions& o) override {
    on_device("recv", t, o.tag);
    return run("recv", t, bytes(t), o.tag, [&] { return inner_->recv(t, o); }, &o);
  }
  // Each operation of the group is counted as its own, all issued by the one call.
  std::vector<std::shared_ptr<Work>> batch_p2p(std::vector<PointToPoint>& ops) override {
    for (const PointToPoint& op : ops) {
      on_device(op.kind == PointToPoint::Kind::send ? "send" : "recv", op.tensor, op.options.tag);
    }
    std::vector<std::shared_ptr<Work>> issued;
    stats_.before_issue(static_cast<int>(ops.size()));
    try {
      issued = inner_->batch_p2p(ops);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw Error(concat("a group of ", ops.size(), " sends and receives on group ", group_, " for ",
                         ops.empty() ? std::string("nobody") : describe_tag(ops.front().options.tag),
                         " could not start: ", e.what()),
                  "");
    }
    PLAIT_CHECK(issued.size() == ops.size(),
                concat("the ", backend(), " communicator returned ", issued.size(), " works for a group of ",
                       ops.size(), " sends and receives"),
                "batch_p2p returns one Work per operation, in order");
    std::vector<std::shared_ptr<Work>> works;
    for (std::size_t k = 0; k < ops.size(); ++k) {
      const bool is_send = ops[k].kind == PointToPoint::Kind::send;
      works.push_back(run(is_send ? "send" : "recv", ops[k].tensor, bytes(ops[k].tensor), ops[k].options.tag,
                          [&] { return issued[k]; }, &ops[k].options, /*already_issued=*/true));
    }
    return works;
  }
  std::shared_ptr<Work> barrier(const CommOptions& o) override {
    return run("barrier", at::Tensor(), 0, o.tag, [&] { return inner_->barrier(o); });
  }

 private:
  static int64_t bytes(const at::Tensor& t) { return static_cast<int64_t>(t.numel() * t.element_size()); }

  // Every tensor a communicator sees is on the rank's device: NCCL handed a host tensor
  // fails in its kernel or reads garbage, gloo handed a GPU one copies it silently. On the
  // meta device (plait plan --measure, the tests' first steps) a host tensor shows here
  // where no GPU exists.
  void on_device(const char* op, const at::Tensor& t, const OpTag& tag, const char* role = nullptr) const {
    if (!t.defined() || t.device() == device_) return;
    throw Error(concat("rank ", ranks_.at(static_cast<std::size_t>(inner_->rank())), ": the ", op, " on group ",
                       group_, " for ", describe_tag(tag), " was handed ", role ? concat("an ", role, " ") : "a ",
                       "tensor on ", t.device().str(), ", but the group's tensors are on ", device_.str(),
                       " (the rank's device)"),
                concat(tag.plugin.empty() ? std::string("the caller") : tag.plugin,
                       " must move what it communicates to the rank's device (where the model's parameters are) before the call"));
  }

  // A traced step's operation: its trace event begins at issue (a collective) or is
  // written at completion (a send or receive, with both ends' global ranks).
  TracedOp trace(const char* op, int64_t payload, const OpTag& tag, const PointToPointOptions* p2p) const {
    TracedOp t;
    t.recorder = TraceRecorder::recording();
    if (t.recorder == nullptr) return t;
    t.issued = TraceRecorder::Clock::now();
    t.name = concat(op, " ", group_);
    t.args = {{"op", op},           {"bytes", payload},     {"group", group_},      {"axis", axis_},
              {"plugin", tag.plugin}, {"phase", tag.phase}, {"unit", tag.unit},     {"microbatch", tag.microbatch}};
    if (p2p != nullptr) {
      const int me = ranks_.at(static_cast<std::size_t>(inner_->rank()));
      const int peer = ranks_.at(static_cast<std::size_t>(p2p->peer));
      t.p2p = true;
      t.is_send = std::string_view(op) == "send";
      t.from = t.is_send ? me : peer;
      t.to = t.is_send ? peer : me;
      t.tag = p2p->tag_id;
    } else {
      t.collective = t.recorder->collective(t.name, t.args, t.issued);
    }
    return t;
  }

  // What the flight recorder keeps of it; the number comes from the recorder.
  FlightOp flight_op(const char* op, const at::Tensor& t, int64_t payload, const OpTag& tag,
                     const PointToPointOptions* p2p) const {
    FlightOp f;
    f.group = group_;
    f.op = op;
    f.dtype = t.defined() ? dtype_name(t.scalar_type()) : "";
    f.bytes = payload;
    if (p2p != nullptr) f.peer = ranks_.at(static_cast<std::size_t>(p2p->peer));
    f.plugin = tag.plugin;
    f.phase = tag.phase;
    f.unit = tag.unit;
    f.microbatch = tag.microbatch;
    return f;
  }

  // [debug] faults: an abort fails every operation; kill, hang and the like strike before
  // the collective they name; a mismatch returns the smaller tensor to issue instead.
  at::Tensor injected_fault(FaultInjector& faults, const at::Tensor& t, const PointToPointOptions* p2p) const {
    PLAIT_CHECK(faults.aborted().empty(),
                concat("rank ", ranks_.at(static_cast<std::size_t>(inner_->rank())), "'s communicator for group ", group_,
                       " was torn down (injected fault '", faults.aborted(), "')"),
                "a fault of [debug] faults or PLAIT_FAULTS did this on purpose");
    if (p2p != nullptr || !faults.at_collective(group_, flight_.collectives_on(group_) + 1)) return {};
    const at::TensorOptions options = t.defined() ? t.options() : at::TensorOptions(at::kFloat).device(device_);
    return at::zeros({std::max<int64_t>(1, (t.defined() ? t.numel() : 2) / 2)}, options);
  }

  template <class Issue>
  std::shared_ptr<Work> run(const char* op, const at::Tensor& t, int64_t payload, const OpTag& tag, Issue&& issue,
                            const PointToPointOptions* p2p = nullptr, bool already_issued = false, bool counted = false) {
    FaultInjector* faults = counted || faults_ == nullptr ? nullptr : faults_->load(std::memory_order_acquire);
    if (at::Tensor half = faults ? injected_fault(*faults, t, p2p) : at::Tensor(); half.defined()) {
      // A mismatch: an all-reduce of half the size goes out instead, under this one's number.
      // (One type for its issue, not a lambda of each instantiation: that would recurse.)
      const std::function<std::shared_ptr<Work>()> issue_half = [this, half]() mutable {
        return inner_->all_reduce(half, {});
      };
      return run("all_reduce", half, bytes(half), tag, issue_half, nullptr, false, /*counted=*/true);
    }
    const std::string description =
        concat(op, " of ", human_bytes(payload), " on group ", group_, " for ", describe_tag(tag));
    std::shared_ptr<Work> work;
    if (!already_issued) stats_.before_issue();
    // Numbered before the backend sees it: a rank stuck inside the issue has entered it.
    const FlightMark flight{&flight_, flight_.issued(flight_op(op, t, payload, tag, p2p))};
    try {
      work = issue();
    } catch (const Error&) {
      flight_.failed(flight.handle);
      throw;
    } catch (const std::exception& e) {
      flight_.failed(flight.handle);
      throw Error(concat(description, " could not start: ", e.what()), "");
    }
    std::weak_ptr<Work> weak = work;
    const uint64_t id = stats_.issue(axis_, op, tag.plugin, payload, payload * CommStats::bus_factor(op, size()),
                                     description,
                                     [weak] {
                                       auto w = weak.lock();
                                       return !w || w->is_completed();
                                     });
    return std::make_shared<CountedWork>(std::move(work), id, stats_, concat(axis_, ".", op), description, on_cpu_,
                                         trace(op, payload, tag, p2p), flight,
                                         ranks_.at(static_cast<std::size_t>(inner_->rank())));
  }

  std::shared_ptr<Communicator> inner_;
  std::string axis_, group_;
  std::vector<int> ranks_;
  CommStats& stats_;
  FlightRecorder& flight_;
  at::Device device_;
  bool on_cpu_;
  const std::atomic<FaultInjector*>* faults_;  // the world's slot; null: no faults ever
};

}  // namespace

std::shared_ptr<Communicator> make_counted(std::shared_ptr<Communicator> inner, std::string axis,
                                           std::string group_name, std::vector<int> ranks, CommStats& stats,
                                           FlightRecorder& flight, const std::string& device,
                                           const std::atomic<FaultInjector*>* faults) {
  const at::Device on(device);
  return std::make_shared<CountedCommunicator>(std::move(inner), std::move(axis), std::move(group_name), std::move(ranks),
                                               stats, flight, on, on.is_cpu() || on.is_meta(), faults);
}

std::shared_ptr<Communicator> make_counted_for_test(std::shared_ptr<Communicator> inner, std::string group_name,
                                                    std::vector<int> ranks, CommStats& stats, FlightRecorder& flight,
                                                    const std::string& tensors_on, bool ends_at_wait) {
  return std::make_shared<CountedCommunicator>(std::move(inner), "dp", std::move(group_name), std::move(ranks), stats,
                                               flight, at::Device(tensors_on), ends_at_wait, nullptr);
}

}  // namespace plait
