#pragma once
// plait's Communicator over any c10d Backend (ProcessGroupGloo, ProcessGroupNCCL):
// the comm plugins differ only in how they build the backend. Header-only, for plugins.
#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "plait/sdk/comm_backend.hpp"
#include "plait/sdk/error.hpp"
#include "plait/sdk/plugin.hpp"

namespace plait::c10d_comm {

// Joining a group (reaching the store, exchanging addresses, connecting the pairs) is
// setup, not a collective: under load (many ranks on few cores, the store answering every
// group of every rank) it can take longer than a short collective_timeout_s, which would
// fail the job before its first step (CI: a dp-4 run with a 3 s timeout whose rank could
// not reach the store in 3 s). It gets at least the store's own default wait for a rank.
inline std::chrono::milliseconds connect_timeout(const GroupSpec& spec) {
  return std::max<std::chrono::milliseconds>(spec.timeout, std::chrono::seconds(60));
}

// The group's own view of the job store: a TCP client under the group's key prefix. Its
// waits are setup's (the backends use the store only to connect).
inline c10::intrusive_ptr<c10d::Store> group_store(const GroupSpec& spec) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>(spec.store_port);
  options.isServer = false;
  options.waitWorkers = false;
  options.timeout = connect_timeout(spec);
  auto tcp = c10::make_intrusive<c10d::TCPStore>(spec.store_host, options);
  return c10::make_intrusive<c10d::PrefixStore>(spec.store_prefix, tcp);
}

// What a wait() holds back. `host`: the calling thread, until the operation is done or its
// timeout passes; the backend's operations run on the host (gloo's threads), and the wait
// is the only place their timeout is kept. `stream`: only the current CUDA stream, ordered
// after the collective; the host goes on at once. ProcessGroupNCCL's wait(timeout) blocks
// the calling thread until the kernel ends whenever it is given a timeout (c10d's
// WorkNCCL::synchronizeInternal), which serialises every bucket, gather and backward
// launch; so a `stream` wait passes c10d::kNoTimeout, and the job's timeout is kept by
// ProcessGroupNCCL's watchdog (Options::timeout, and each operation's own from its issue).
enum class WaitHolds { host, stream };

// The timeout a wait() hands to the c10d Work: `asked` (0: the group's `group_timeout`,
// 0 again: the backend's own) on a host wait; none on a stream wait.
inline std::chrono::milliseconds c10d_wait_timeout(WaitHolds holds, std::chrono::milliseconds asked,
                                                   std::chrono::milliseconds group_timeout) {
  if (holds == WaitHolds::stream) return ::kNoTimeout;  // c10d declares it outside its namespace
  return asked.count() > 0 ? asked : group_timeout;
}

class C10dWork final : public Work {
 public:
  // `group_timeout`: the wait of an operation given none (0: the backend's own). gloo's
  // receives otherwise wait as long as its pairs took to connect, not the group's timeout.
  C10dWork(c10::intrusive_ptr<c10d::Work> work, bool device_timed,
           std::chrono::milliseconds group_timeout = std::chrono::milliseconds(0), WaitHolds holds = WaitHolds::host)
      : work_(std::move(work)), timed_(device_timed), group_timeout_(group_timeout), holds_(holds) {}
  bool is_completed() override { return work_->isCompleted(); }
  // c10d's getDuration() is the milliseconds between the CUDA events around the kernel,
  // recorded only when the backend's timing is on; it refuses an unfinished operation.
  std::optional<double> device_seconds() override {
    if (!timed_ || !work_->isCompleted()) return std::nullopt;
    try {
      return static_cast<double>(work_->getDuration()) / 1e3;
    } catch (const std::exception&) {
      return std::nullopt;  // a coalesced group or a barrier that recorded no start event
    }
  }
  void wait(std::chrono::milliseconds timeout) override {
    work_->wait(c10d_wait_timeout(holds_, timeout, group_timeout_));
  }
  std::exception_ptr exception() override { return work_->isCompleted() ? work_->exception() : nullptr; }

 private:
  c10::intrusive_ptr<c10d::Work> work_;
  bool timed_;
  std::chrono::milliseconds group_timeout_;
  WaitHolds holds_;
};

class C10dCommunicator final : public Communicator, public CommunicatorShutdown {
 public:
  // `device_timed`: the backend records CUDA events around each kernel (getDuration()).
  // `holds`: what its waits hold back (WaitHolds: `stream` for a CUDA backend).
  C10dCommunicator(c10::intrusive_ptr<c10d::Backend> backend, std::string name, int rank, int size, bool supports_avg,
                   bool device_timed = false, WaitHolds holds = WaitHolds::host)
      : backend_(std::move(backend)),
        name_(std::move(name)),
        rank_(rank),
        size_(size),
        supports_avg_(supports_avg),
        device_timed_(device_timed),
        holds_(holds),
        group_timeout_(timeout_of(*backend_)) {}

  // The backend, for what a plugin does beyond the Communicator (splitting it, shutting
  // it down).
  const c10::intrusive_ptr<c10d::Backend>& c10d_backend() const { return backend_; }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return name_; }

  std::shared_ptr<Work> all_reduce(at::Tensor& t, const AllReduceOptions& o) override {
    std::vector<at::Tensor> v{t};
    c10d::AllreduceOptions opts;
    opts.reduceOp = reduce_op(o.op);
    set_timeout(opts, o);
    return wrap(backend_->allreduce(v, opts));
  }
  std::shared_ptr<Work> reduce_scatter(at::Tensor& out, const at::Tensor& in, const ReduceScatterOptions& o) override {
    at::Tensor input = in;
    c10d::ReduceScatterOptions opts;
    opts.reduceOp = reduce_op(o.op);
    set_timeout(opts, o);
    return wrap(backend_->_reduce_scatter_base(out, input, opts));
  }
  std::shared_ptr<Work> all_gather(at::Tensor& out, const at::Tensor& in, const CommOptions& o) override {
    at::Tensor input = in;
    c10d::AllgatherOptions opts;
    set_timeout(opts, o);
    return wrap(backend_->_allgather_base(out, input, opts));
  }
  std::shared_ptr<Work> broadcast(at::Tensor& t, const BroadcastOptions& o) override {
    std::vector<at::Tensor> v{t};
    c10d::BroadcastOptions opts;
    opts.rootRank = o.root;
    set_timeout(opts, o);
    return wrap(backend_->broadcast(v, opts));
  }
  std::shared_ptr<Work> send(const at::Tensor& t, const PointToPointOptions& o) override {
    std::vector<at::Tensor> v{t};
    return wrap(backend_->send(v, o.peer, o.tag_id));
  }
  std::shared_ptr<Work> recv(at::Tensor& t, const PointToPointOptions& o) override {
    std::vector<at::Tensor> v{t};
    return wrap(backend_->recv(v, o.peer, o.tag_id));
  }
  // NCCL coalesces the group into one ncclGroupStart/End and gives one Work for it;
  // gloo's sends never wait for their receive, so posting them in turn is the same.
  std::vector<std::shared_ptr<Work>> batch_p2p(std::vector<PointToPoint>& ops) override {
    std::vector<std::shared_ptr<Work>> works;
    if (!backend_->supportsCoalescing()) {
      for (auto& op : ops) works.push_back(post(op));
      return works;
    }
    backend_->startCoalescing();
    try {
      for (auto& op : ops) post(op);
    } catch (...) {
      backend_->endCoalescing();
      throw;
    }
    works.assign(ops.size(), wrap(backend_->endCoalescing()));
    return works;
  }
  std::shared_ptr<Work> barrier(const CommOptions& o) override {
    c10d::BarrierOptions opts;
    set_timeout(opts, o);
    return wrap(backend_->barrier(opts));
  }
  // As torch.distributed's destroy_process_group() and abort: c10d's own ending.
  void shutdown() override { backend_->shutdown(); }
  void abort() override { backend_->abort(); }
  void* find_extension(std::string_view id) override { return offer<CommunicatorShutdown>(this, id); }

 private:
  std::shared_ptr<Work> post(PointToPoint& op) {
    return op.kind == PointToPoint::Kind::send ? send(op.tensor, op.options) : recv(op.tensor, op.options);
  }
  c10d::ReduceOp reduce_op(ReduceOp op) const {
    switch (op) {
      case ReduceOp::sum: return c10d::ReduceOp::SUM;
      case ReduceOp::max: return c10d::ReduceOp::MAX;
      case ReduceOp::min: return c10d::ReduceOp::MIN;
      case ReduceOp::avg:
        if (supports_avg_) return c10d::ReduceOp::AVG;
        break;
    }
    throw Error(concat(name_, " does not support the avg reduction"), "reduce with sum and divide by the group size");
  }
  template <class C10dOptions>
  static void set_timeout(C10dOptions& opts, const CommOptions& o) {
    if (o.timeout.count() > 0) opts.timeout = o.timeout;
  }
  std::shared_ptr<Work> wrap(c10::intrusive_ptr<c10d::Work> w) const {
    return std::make_shared<C10dWork>(std::move(w), device_timed_, group_timeout_, holds_);
  }
  static std::chrono::milliseconds timeout_of(c10d::Backend& backend) {
    try {
      return backend.getBackendOptions()->timeout;
    } catch (const std::exception&) {
      return std::chrono::milliseconds(0);  // a backend without options: its own default
    }
  }

  c10::intrusive_ptr<c10d::Backend> backend_;
  std::string name_;
  int rank_, size_;
  bool supports_avg_;
  bool device_timed_;
  WaitHolds holds_;
  std::chrono::milliseconds group_timeout_;
};

}  // namespace plait::c10d_comm
