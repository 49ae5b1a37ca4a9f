// The CPU communicator: LibTorch's c10d ProcessGroupGloo behind plait's Communicator.
// Rendezvous goes through the job's TCP store under the group's own key prefix.
#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "plait/sdk/sdk.hpp"
#include "plait_schema.hpp"

namespace {

c10d::ReduceOp to_c10d(plait::ReduceOp op) {
  switch (op) {
    case plait::ReduceOp::sum: return c10d::ReduceOp::SUM;
    case plait::ReduceOp::max: return c10d::ReduceOp::MAX;
    case plait::ReduceOp::min: return c10d::ReduceOp::MIN;
    case plait::ReduceOp::avg: break;
  }
  throw plait::Error("gloo does not support the avg reduction", "reduce with sum and divide by the group size");
}

// The address of this host on the route to `host`: what peers can reach us by.
std::string local_address_towards(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  PLAIT_CHECK(rc == 0 && found != nullptr, plait::concat("gloo: cannot resolve ", host, ": ", gai_strerror(rc)),
              "check MASTER_ADDR");
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  std::string address;
  if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0) {  // UDP: no packet is sent
    sockaddr_in local{};
    socklen_t len = sizeof(local);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
      char buf[INET_ADDRSTRLEN];
      address = ::inet_ntop(AF_INET, &local.sin_addr, buf, sizeof(buf));
    }
  }
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(found);
  PLAIT_CHECK(!address.empty(), plait::concat("gloo: no local interface routes to ", host),
              "set [gloo] interface to the network interface to use");
  return address;
}

class GlooWork final : public plait::Work {
 public:
  explicit GlooWork(c10::intrusive_ptr<c10d::Work> work) : work_(std::move(work)) {}
  bool is_completed() override { return work_->isCompleted(); }
  void wait(std::chrono::milliseconds timeout) override {
    work_->wait(timeout.count() > 0 ? timeout : kNoTimeout);
  }
  std::exception_ptr exception() override { return work_->isCompleted() ? work_->exception() : nullptr; }

 private:
  c10::intrusive_ptr<c10d::Work> work_;
};

class GlooCommunicator final : public plait::Communicator {
 public:
  GlooCommunicator(c10::intrusive_ptr<c10d::ProcessGroupGloo> pg, int rank, int size)
      : pg_(std::move(pg)), rank_(rank), size_(size) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "gloo"; }

  std::shared_ptr<plait::Work> all_reduce(at::Tensor& t, const plait::AllReduceOptions& o) override {
    std::vector<at::Tensor> v{t};
    c10d::AllreduceOptions opts;
    opts.reduceOp = to_c10d(o.op);
    set_timeout(opts, o);
    return wrap(pg_->allreduce(v, opts));
  }
  std::shared_ptr<plait::Work> reduce_scatter(at::Tensor& out, const at::Tensor& in,
                                              const plait::ReduceScatterOptions& o) override {
    at::Tensor input = in;
    c10d::ReduceScatterOptions opts;
    opts.reduceOp = to_c10d(o.op);
    set_timeout(opts, o);
    return wrap(pg_->_reduce_scatter_base(out, input, opts));
  }
  std::shared_ptr<plait::Work> all_gather(at::Tensor& out, const at::Tensor& in, const plait::CommOptions& o) override {
    at::Tensor input = in;
    c10d::AllgatherOptions opts;
    set_timeout(opts, o);
    return wrap(pg_->_allgather_base(out, input, opts));
  }
  std::shared_ptr<plait::Work> broadcast(at::Tensor& t, const plait::BroadcastOptions& o) override {
    std::vector<at::Tensor> v{t};
    c10d::BroadcastOptions opts;
    opts.rootRank = o.root;
    set_timeout(opts, o);
    return wrap(pg_->broadcast(v, opts));
  }
  std::shared_ptr<plait::Work> send(const at::Tensor& t, const plait::PointToPointOptions& o) override {
    std::vector<at::Tensor> v{t};
    return wrap(pg_->send(v, o.peer, o.tag_id));
  }
  std::shared_ptr<plait::Work> recv(at::Tensor& t, const plait::PointToPointOptions& o) override {
    std::vector<at::Tensor> v{t};
    return wrap(pg_->recv(v, o.peer, o.tag_id));
  }
  std::shared_ptr<plait::Work> barrier(const plait::CommOptions& o) override {
    c10d::BarrierOptions opts;
    set_timeout(opts, o);
    return wrap(pg_->barrier(opts));
  }

 private:
  template <class C10dOptions>
  static void set_timeout(C10dOptions& opts, const plait::CommOptions& o) {
    if (o.timeout.count() > 0) opts.timeout = o.timeout;
  }
  static std::shared_ptr<plait::Work> wrap(c10::intrusive_ptr<c10d::Work> w) {
    return std::make_shared<GlooWork>(std::move(w));
  }

  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg_;
  int rank_, size_;
};

class GlooBackend final : public plait::CommBackend {
 public:
  void configure(const plait::PluginContext& context) override {
    threads_ = static_cast<int>(context.options->get<int64_t>("threads"));
    interface_ = context.options->find<std::string>("interface").value_or("");
  }

  std::shared_ptr<plait::Communicator> connect(const plait::GroupSpec& spec) override {
    PLAIT_CHECK(spec.device == "cpu", plait::concat("gloo moves CPU tensors; group ", spec.name, " is on ", spec.device),
                "use the nccl communicator for CUDA tensors");
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<uint16_t>(spec.store_port);
    store_options.isServer = false;
    store_options.waitWorkers = false;
    store_options.timeout = spec.timeout;
    auto tcp = c10::make_intrusive<c10d::TCPStore>(spec.store_host, store_options);
    auto store = c10::make_intrusive<c10d::PrefixStore>(spec.store_prefix, tcp);
    auto options = c10d::ProcessGroupGloo::Options::create(spec.timeout);
    options->devices = {interface_.empty() ? c10d::ProcessGroupGloo::createDeviceForHostname(
                                                 local_address_towards(spec.store_host, spec.store_port))
                                           : c10d::ProcessGroupGloo::createDeviceForInterface(interface_)};
    options->threads = threads_;
    const int size = static_cast<int>(spec.ranks.size());
    auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(store, spec.group_rank, size, options);
    return std::make_shared<GlooCommunicator>(std::move(pg), spec.group_rank, size);
  }

 private:
  int threads_ = 2;
  std::string interface_;
};

}  // namespace

PLAIT_PLUGIN(GlooBackend, "gloo", "1.0.0", "cpu", plait_schema_toml,
             "CPU collectives and send/recv through LibTorch's ProcessGroupGloo")
