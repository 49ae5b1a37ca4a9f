#include "distributed/counted_communicator.hpp"

#include <cstdio>

#include "plait/sdk/error.hpp"
#include "util/human_bytes.hpp"

namespace plait {
namespace {

class CountedWork final : public Work {
 public:
  CountedWork(std::shared_ptr<Work> inner, uint64_t id, CommStats& stats, std::string description, bool on_cpu)
      : inner_(std::move(inner)), id_(id), stats_(stats), description_(std::move(description)), on_cpu_(on_cpu) {}

  bool is_completed() override {
    const bool done = inner_->is_completed();
    if (done) stats_.complete(id_, inner_->device_seconds());
    return done;
  }
  // The host's time in here is the exposed time; on a GPU the operation may still be
  // running when it returns, and the stats keep it until the device says it is done.
  void wait(std::chrono::milliseconds timeout) override {
    const auto started = std::chrono::steady_clock::now();
    try {
      inner_->wait(timeout);
    } catch (const std::exception& e) {
      stats_.complete(id_);
      throw Error(concat(description_, " failed: ", e.what()),
                  "a peer may have died or be stuck elsewhere: see the other ranks' logs");
    }
    const double blocked = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    // A CPU operation is done when its wait returns, whatever its Work says (gloo's
    // reduce-scatter reports itself incomplete for a while after).
    if (on_cpu_) {
      stats_.complete(id_, inner_->device_seconds(), blocked);
      return;
    }
    stats_.waited(id_, blocked,
                  HeldOp{.is_completed = [w = inner_] { return w->is_completed(); },
                         .device_seconds = [w = inner_] { return w->device_seconds(); }});
  }
  std::exception_ptr exception() override { return inner_->exception(); }
  std::optional<double> device_seconds() override { return inner_->device_seconds(); }

 private:
  std::shared_ptr<Work> inner_;
  uint64_t id_;
  CommStats& stats_;
  std::string description_;
  bool on_cpu_;
};

class CountedCommunicator final : public Communicator {
 public:
  CountedCommunicator(std::shared_ptr<Communicator> inner, std::string axis, std::string group, CommStats& stats,
                      bool on_cpu)
      : inner_(std::move(inner)), axis_(std::move(axis)), group_(std::move(group)), stats_(stats), on_cpu_(on_cpu) {}

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string backend() const override { return inner_->backend(); }

  std::shared_ptr<Work> all_reduce(at::Tensor& t, const AllReduceOptions& o) override {
    return run("all_reduce", bytes(t), o.tag, [&] { return inner_->all_reduce(t, o); });
  }
  std::shared_ptr<Work> reduce_scatter(at::Tensor& out, const at::Tensor& in, const ReduceScatterOptions& o) override {
    return run("reduce_scatter", bytes(in), o.tag, [&] { return inner_->reduce_scatter(out, in, o); });
  }
  std::shared_ptr<Work> all_gather(at::Tensor& out, const at::Tensor& in, const CommOptions& o) override {
    return run("all_gather", bytes(out), o.tag, [&] { return inner_->all_gather(out, in, o); });
  }
  std::shared_ptr<Work> broadcast(at::Tensor& t, const BroadcastOptions& o) override {
    return run("broadcast", bytes(t), o.tag, [&] { return inner_->broadcast(t, o); });
  }
  std::shared_ptr<Work> send(const at::Tensor& t, const PointToPointOptions& o) override {
    return run("send", bytes(t), o.tag, [&] { return inner_->send(t, o); });
  }
  std::shared_ptr<Work> recv(at::Tensor& t, const PointToPointOptions& o) override {
    return run("recv", bytes(t), o.tag, [&] { return inner_->recv(t, o); });
  }
  // Each operation of the group is counted as its own, all issued by the one call.
  std::vector<std::shared_ptr<Work>> batch_p2p(std::vector<PointToPoint>& ops) override {
    std::vector<std::shared_ptr<Work>> issued;
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
      works.push_back(run(is_send ? "send" : "recv", bytes(ops[k].tensor), ops[k].options.tag,
                          [&] { return issued[k]; }));
    }
    return works;
  }
  std::shared_ptr<Work> barrier(const CommOptions& o) override {
    return run("barrier", 0, o.tag, [&] { return inner_->barrier(o); });
  }

 private:
  static int64_t bytes(const at::Tensor& t) { return static_cast<int64_t>(t.numel() * t.element_size()); }

  template <class Issue>
  std::shared_ptr<Work> run(const char* op, int64_t payload, const OpTag& tag, Issue&& issue) {
    const std::string description =
        concat(op, " of ", human_bytes(payload), " on group ", group_, " for ", describe_tag(tag));
    std::shared_ptr<Work> work;
    try {
      work = issue();
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw Error(concat(description, " could not start: ", e.what()), "");
    }
    std::weak_ptr<Work> weak = work;
    const uint64_t id = stats_.issue(axis_, op, tag.plugin, payload, payload * CommStats::bus_factor(op, size()),
                                     description,
                                     [weak] {
                                       auto w = weak.lock();
                                       return !w || w->is_completed();
                                     });
    return std::make_shared<CountedWork>(std::move(work), id, stats_, description, on_cpu_);
  }

  std::shared_ptr<Communicator> inner_;
  std::string axis_, group_;
  CommStats& stats_;
  bool on_cpu_;
};

}  // namespace

std::shared_ptr<Communicator> make_counted(std::shared_ptr<Communicator> inner, std::string axis,
                                           std::string group_name, CommStats& stats, const std::string& device) {
  return std::make_shared<CountedCommunicator>(std::move(inner), std::move(axis), std::move(group_name), stats,
                                               device.rfind("cpu", 0) == 0);
}

}  // namespace plait
