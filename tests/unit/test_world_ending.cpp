// How a rank's communicators end and what each group is split from: the world's groups
// are shut down after a clean end and aborted otherwise, the last made first (a subgroup
// before its axis group, the world last), and each group names the group it partitions.
#include <catch2/catch.hpp>

#include "distributed/instant_backend.hpp"
#include "distributed/world.hpp"

using namespace plait;

namespace {

struct Journal {
  std::vector<std::string> split_from;  // "<group> from <parent>" as connected
  std::vector<std::string> ended;       // "<shutdown|abort> <group>"
};

// The instant communicator's operations, with an ending that is written down.
class EndingCommunicator final : public Communicator, public CommunicatorShutdown {
 public:
  EndingCommunicator(std::shared_ptr<Communicator> inner, std::string name, Journal& journal)
      : inner_(std::move(inner)), name_(std::move(name)), journal_(journal) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string backend() const override { return "ending"; }
  std::shared_ptr<Work> all_reduce(at::Tensor& t, const AllReduceOptions& o) override { return inner_->all_reduce(t, o); }
  std::shared_ptr<Work> reduce_scatter(at::Tensor& out, const at::Tensor& in, const ReduceScatterOptions& o) override {
    return inner_->reduce_scatter(out, in, o);
  }
  std::shared_ptr<Work> all_gather(at::Tensor& out, const at::Tensor& in, const CommOptions& o) override {
    return inner_->all_gather(out, in, o);
  }
  std::shared_ptr<Work> broadcast(at::Tensor& t, const BroadcastOptions& o) override { return inner_->broadcast(t, o); }
  std::shared_ptr<Work> send(const at::Tensor& t, const PointToPointOptions& o) override { return inner_->send(t, o); }
  std::shared_ptr<Work> recv(at::Tensor& t, const PointToPointOptions& o) override { return inner_->recv(t, o); }
  std::vector<std::shared_ptr<Work>> batch_p2p(std::vector<PointToPoint>& ops) override { return inner_->batch_p2p(ops); }
  std::shared_ptr<Work> barrier(const CommOptions& o) override { return inner_->barrier(o); }
  void shutdown() override { journal_.ended.push_back("shutdown " + name_); }
  void abort() override { journal_.ended.push_back("abort " + name_); }
  void* find_extension(std::string_view id) override { return offer<CommunicatorShutdown>(this, id); }

 private:
  std::shared_ptr<Communicator> inner_;
  std::string name_;
  Journal& journal_;
};

class EndingBackend final : public CommBackend {
 public:
  explicit EndingBackend(Journal& journal) : journal_(journal) {}
  std::shared_ptr<Communicator> connect(const GroupSpec& spec) override {
    journal_.split_from.push_back(spec.name + " from " + (spec.split_from.empty() ? "nothing" : spec.split_from));
    return std::make_shared<EndingCommunicator>(instant_->connect(spec), spec.name, journal_);
  }

 private:
  Journal& journal_;
  std::unique_ptr<CommBackend> instant_ = make_instant_backend();
};

MeshShape dp_of(int dp) {
  MeshShape shape;
  shape.dp = dp;
  return shape;
}

}  // namespace

TEST_CASE("a rank's groups are split from the group they partition and end in order: shut down or aborted",
          "[dist][ending]") {
  Journal journal;
  EndingBackend backend(journal);
  {
    auto world = World::alone(dp_of(4), 0, backend, "cpu");
    world->subgroup(Axis::dp, "shard.0", {0, 1});
    CHECK(journal.split_from == std::vector<std::string>{"world from nothing", "dp.0 from world",
                                                         "dp.0.shard.0 from dp.0"});
    world->shut_down();
    CHECK(journal.ended == std::vector<std::string>{"shutdown dp.0.shard.0", "shutdown dp.0", "shutdown world"});
  }
  CHECK(journal.ended.size() == 3);  // once: destroying a world shut down ends nothing more
  journal.ended.clear();
  {
    auto failed = World::alone(dp_of(2), 1, backend, "cpu");
  }  // a rank that fails never shuts down: its world aborts the groups
  CHECK(journal.ended == std::vector<std::string>{"abort dp.0", "abort world"});
}
