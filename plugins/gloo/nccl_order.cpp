#include "nccl_order.hpp"

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include <ATen/ATen.h>

#include "plait/sdk/error.hpp"

namespace plait::gloo_plugin {
namespace {

constexpr uint64_t kSequenceWrap = uint64_t{1} << 29;  // gloo's tags are ints: 2 per message

int64_t bytes_of(const at::Tensor& t) { return static_cast<int64_t>(t.numel() * t.element_size()); }

// One batch_p2p group (a lone send or recv is a group of one), run by the worker.
struct Group {
  std::vector<PointToPoint> ops;
  std::vector<uint64_t> number;  // each message's number in its direction between the two ranks
  std::vector<at::Tensor> headers;
  std::chrono::milliseconds timeout{0};
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;

  void finish(std::exception_ptr e) {
    {
      std::lock_guard<std::mutex> lock(m);
      error = std::move(e);
      done = true;
    }
    cv.notify_all();
  }
};

class GroupWork final : public Work {
 public:
  explicit GroupWork(std::shared_ptr<Group> g) : g_(std::move(g)) {}
  bool is_completed() override {
    std::lock_guard<std::mutex> lock(g_->m);
    return g_->done;
  }
  void wait(std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lock(g_->m);
    const auto limit = timeout.count() > 0 ? timeout : g_->timeout;
    // The worker itself gives up after the group's timeout; this waits a little longer
    // so that its sentence, which names the operation, is the one the caller sees.
    if (!g_->cv.wait_for(lock, limit + std::chrono::seconds(5), [&] { return g_->done; })) {
      throw Error(concat("a point-to-point group did not complete within ", limit.count(), " ms"),
                  "a peer may be stuck elsewhere: see the other ranks' logs");
    }
    if (g_->error) std::rethrow_exception(g_->error);
  }
  std::exception_ptr exception() override {
    std::lock_guard<std::mutex> lock(g_->m);
    return g_->done ? g_->error : nullptr;
  }

 private:
  std::shared_ptr<Group> g_;
};

class NcclOrderCommunicator final : public Communicator {
 public:
  NcclOrderCommunicator(std::shared_ptr<Communicator> gloo, std::string name, std::chrono::milliseconds timeout)
      : gloo_(std::move(gloo)), name_(std::move(name)), timeout_(timeout), worker_([this] { work(); }) {}
  ~NcclOrderCommunicator() override {
    {
      std::lock_guard<std::mutex> lock(m_);
      stopping_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }

  int rank() const override { return gloo_->rank(); }
  int size() const override { return gloo_->size(); }
  std::string backend() const override { return gloo_->backend(); }
  std::shared_ptr<Work> all_reduce(at::Tensor& t, const AllReduceOptions& o) override { return gloo_->all_reduce(t, o); }
  std::shared_ptr<Work> reduce_scatter(at::Tensor& out, const at::Tensor& in, const ReduceScatterOptions& o) override {
    return gloo_->reduce_scatter(out, in, o);
  }
  std::shared_ptr<Work> all_gather(at::Tensor& out, const at::Tensor& in, const CommOptions& o) override {
    return gloo_->all_gather(out, in, o);
  }
  std::shared_ptr<Work> broadcast(at::Tensor& t, const BroadcastOptions& o) override { return gloo_->broadcast(t, o); }
  std::shared_ptr<Work> barrier(const CommOptions& o) override { return gloo_->barrier(o); }

  std::shared_ptr<Work> send(const at::Tensor& t, const PointToPointOptions& o) override {
    std::vector<PointToPoint> one{{PointToPoint::Kind::send, t, o}};
    return batch_p2p(one).front();
  }
  std::shared_ptr<Work> recv(at::Tensor& t, const PointToPointOptions& o) override {
    std::vector<PointToPoint> one{{PointToPoint::Kind::recv, t, o}};
    return batch_p2p(one).front();
  }

  std::vector<std::shared_ptr<Work>> batch_p2p(std::vector<PointToPoint>& ops) override {
    auto g = std::make_shared<Group>();
    g->ops = ops;
    g->timeout = timeout_;
    std::chrono::milliseconds asked{0};  // the longest an operation asked for, else the group's default
    {
      std::lock_guard<std::mutex> lock(m_);
      for (const auto& op : ops) {
        PLAIT_CHECK(op.options.peer >= 0 && op.options.peer < size() && op.options.peer != rank(),
                    concat("group ", name_, ": rank ", rank(), " cannot exchange with rank ", op.options.peer), "");
        auto& counter = (op.kind == PointToPoint::Kind::send ? sent_ : received_)[op.options.peer];
        g->number.push_back(counter);
        counter = (counter + 1) % kSequenceWrap;
        if (op.options.timeout.count() > 0) asked = std::max(asked, op.options.timeout);
      }
      if (asked.count() > 0) g->timeout = asked;
      queue_.push_back(g);
    }
    cv_.notify_all();
    return std::vector<std::shared_ptr<Work>>(ops.size(), std::make_shared<GroupWork>(g));
  }

 private:
  void work() {
    for (;;) {
      std::shared_ptr<Group> g;
      {
        std::unique_lock<std::mutex> lock(m_);
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        g = queue_.front();
        queue_.pop_front();
      }
      if (broken_) {
        g->finish(broken_);
        continue;
      }
      try {
        run(*g);
        g->finish(nullptr);
      } catch (...) {
        broken_ = std::current_exception();  // gloo's pairs hold its buffers: later groups cannot run
        kept_.push_back(g);
        g->finish(broken_);
      }
    }
  }

  // Every operation progresses on its own, as in an NCCL group: a send posts its header
  // (tag id and size) and its data at once; a receive posts its header, and its data
  // once the header arrived and matched. Gloo's works complete only in wait(), so each
  // operation waits on a thread of its own.
  void run(Group& g) {
    const std::size_t n = g.ops.size();
    for (std::size_t k = 0; k < n; ++k) {
      at::Tensor h = at::empty({2}, at::kLong);
      if (g.ops[k].kind == PointToPoint::Kind::send) {
        h[0] = static_cast<int64_t>(g.ops[k].options.tag_id);
        h[1] = bytes_of(g.ops[k].tensor);
      }
      g.headers.push_back(h);
    }
    const auto deadline = std::chrono::steady_clock::now() + g.timeout;
    std::vector<std::exception_ptr> failed(n);
    auto one = [&](std::size_t k) {
      const auto& op = g.ops[k];
      try {
        auto header = post(op.kind, g.headers[k], op.options.peer, static_cast<int>(2 * g.number[k]));
        std::shared_ptr<Work> data;
        if (op.kind == PointToPoint::Kind::send) data = post(op.kind, op.tensor, op.options.peer, tag_of_data(g, k));
        wait_until(*header, deadline);
        if (op.kind == PointToPoint::Kind::recv) {
          check_match(g, k);
          data = post(op.kind, op.tensor, op.options.peer, tag_of_data(g, k));
        }
        wait_until(*data, deadline);
      } catch (const Error&) {
        failed[k] = std::current_exception();
      } catch (const std::exception& e) {
        failed[k] = std::make_exception_ptr(failure(g, k, std::chrono::steady_clock::now() >= deadline, e.what()));
      }
    };
    if (n == 1) {
      one(0);
    } else {
      std::vector<std::thread> threads;
      for (std::size_t k = 0; k < n; ++k) threads.emplace_back(one, k);
      for (auto& t : threads) t.join();
    }
    for (auto& e : failed) {
      if (e) std::rethrow_exception(e);
    }
  }

  static int tag_of_data(const Group& g, std::size_t k) { return static_cast<int>(2 * g.number[k] + 1); }

  // Rounded up, so that gloo's own timeout never fires before the deadline, which is what
  // makes its failure read as "did not complete within".
  static void wait_until(Work& work, std::chrono::steady_clock::time_point deadline) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    work.wait(std::max(left, std::chrono::milliseconds(0)) + std::chrono::milliseconds(1));
  }

  // `timed_out`: the deadline passed (gloo's own words would only say so, with its source path).
  Error failure(const Group& g, std::size_t k, bool timed_out, const std::string& cause) const {
    const auto& op = g.ops[k];
    const bool is_send = op.kind == PointToPoint::Kind::send;
    std::string why = first_line(cause);
    if (why.rfind('[', 0) == 0 && why.find("] ") != std::string::npos) why = why.substr(why.find("] ") + 2);
    return Error(concat("[gloo] p2p = \"nccl\": on group ", name_, ", rank ", rank(), "'s ",
                        is_send ? "send to" : "receive from", " rank ", op.options.peer, " for ",
                        describe_tag(op.options.tag), " (message ", g.number[k] + 1, " ", is_send ? "to" : "from",
                        " that rank) ",
                        timed_out ? concat("did not complete within ", g.timeout.count() / 1000.0, " s")
                                  : concat("failed: ", why)),
                 concat("under NCCL a send waits until its receive is posted, and a rank's groups of sends and "
                        "receives run in the order they were posted: rank ",
                        op.options.peer, " is stuck before its matching ", is_send ? "receive" : "send",
                        ", or waits for this rank; post a pair's opposite messages in one batch_p2p group"));
  }

  std::shared_ptr<Work> post(PointToPoint::Kind kind, at::Tensor t, int peer, int tag) {
    PointToPointOptions o;
    o.peer = peer;
    o.tag_id = tag;
    return kind == PointToPoint::Kind::send ? gloo_->send(t, o) : gloo_->recv(t, o);
  }

  void check_match(const Group& g, std::size_t k) const {
    const auto& op = g.ops[k];
    const int64_t tag = g.headers[k][0].item<int64_t>(), bytes = g.headers[k][1].item<int64_t>();
    if (tag == op.options.tag_id && bytes == bytes_of(op.tensor)) return;
    throw Error(concat("[gloo] p2p = \"nccl\": on group ", name_, ", messages from rank ", op.options.peer,
                       " to rank ", rank(), " match out of order: message ", g.number[k] + 1,
                       " is rank ", op.options.peer, "'s send for tag id ", tag, " (", bytes, " bytes), but rank ",
                       rank(), " posted it for ", describe_tag(op.options.tag), " (tag id ", op.options.tag_id, ", ",
                       bytes_of(op.tensor), " bytes)"),
                "NCCL ignores tags: the k-th message a rank sends to another is the other's k-th receive from it, "
                "so both must post the messages between them in the same order");
  }

  static std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

  std::shared_ptr<Communicator> gloo_;
  std::string name_;
  std::chrono::milliseconds timeout_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Group>> queue_;
  std::map<int, uint64_t> sent_, received_;
  bool stopping_ = false;
  std::exception_ptr broken_;              // the worker's own
  std::vector<std::shared_ptr<Group>> kept_;  // failed groups' buffers, which gloo may still write
  std::thread worker_;
};

}  // namespace

std::shared_ptr<Communicator> with_nccl_p2p_order(std::shared_ptr<Communicator> gloo, std::string group_name,
                                                  std::chrono::milliseconds timeout) {
  return std::make_shared<NcclOrderCommunicator>(std::move(gloo), std::move(group_name), timeout);
}

}  // namespace plait::gloo_plugin
