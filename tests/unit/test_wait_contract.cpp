// What a wait() does, per backend: the c10d communicator's timeout handed to c10d's Work
// (none on a stream wait: ProcessGroupNCCL would block the host until the kernel ends),
// and the flight record of an operation whose wait returned while the device still runs it.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "distributed/comm_stats.hpp"
#include "distributed/counted_communicator.hpp"
#include "distributed/flight_recorder.hpp"
#include "plait/c10d/communicator.hpp"

using namespace plait;

namespace {

// A c10d Work that records the timeout each wait() was given.
class RecordingWork final : public c10d::Work {
 public:
  explicit RecordingWork(std::vector<std::chrono::milliseconds>& seen) : seen_(seen) {}
  bool wait(std::chrono::milliseconds timeout) override {
    seen_.push_back(timeout);
    return true;
  }
  bool isCompleted() override { return true; }

 private:
  std::vector<std::chrono::milliseconds>& seen_;
};

// A c10d backend with a group timeout of 7 s whose every operation gives a RecordingWork.
class RecordingBackend final : public c10d::Backend {
 public:
  RecordingBackend() : c10d::Backend(0, 2) {}
  const std::string getBackendName() const override { return "recording"; }
  c10::intrusive_ptr<Options> getBackendOptions() override {
    return c10::make_intrusive<Options>("recording", std::chrono::seconds(7));
  }
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>&, const c10d::AllreduceOptions&) override {
    return c10::make_intrusive<RecordingWork>(seen);
  }
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor&, at::Tensor&, const c10d::AllgatherOptions&) override {
    return c10::make_intrusive<RecordingWork>(seen);
  }
  std::vector<std::chrono::milliseconds> seen;
};

}  // namespace

TEST_CASE("a stream wait hands c10d no timeout and a host wait the one asked or the group's", "[dist][wait]") {
  using c10d_comm::WaitHolds;
  for (WaitHolds holds : {WaitHolds::host, WaitHolds::stream}) {
    auto backend = c10::make_intrusive<RecordingBackend>();
    c10d_comm::C10dCommunicator comm(backend, "recording", 0, 2, true, false, holds);
    at::Tensor t = at::ones({4});
    at::Tensor all = at::empty({8});
    comm.all_reduce(t, {})->wait();
    comm.all_gather(all, t, {})->wait(std::chrono::milliseconds(1500));
    REQUIRE(backend->seen.size() == 2);
    if (holds == WaitHolds::stream) {
      CHECK(backend->seen[0] == ::kNoTimeout);
      CHECK(backend->seen[1] == ::kNoTimeout);
    } else {
      CHECK(backend->seen[0] == std::chrono::seconds(7));
      CHECK(backend->seen[1] == std::chrono::milliseconds(1500));
    }
  }
  // A communicator built before the choice existed keeps the host wait.
  auto backend = c10::make_intrusive<RecordingBackend>();
  c10d_comm::C10dCommunicator old_style(backend, "recording", 0, 2, true);
  at::Tensor t = at::ones({4});
  old_style.all_reduce(t, {})->wait();
  CHECK(backend->seen.at(0) == std::chrono::seconds(7));
}

namespace {

// A communicator whose operations run "on a device" until `running` turns false.
class DeviceLikeWork final : public Work {
 public:
  explicit DeviceLikeWork(const bool& running) : running_(running) {}
  bool is_completed() override { return !running_; }
  void wait(std::chrono::milliseconds) override {}  // orders a stream: returns at once
  std::exception_ptr exception() override { return nullptr; }

 private:
  const bool& running_;
};

class DeviceLikeCommunicator final : public Communicator {
 public:
  explicit DeviceLikeCommunicator(const bool& running) : running_(running) {}
  int rank() const override { return 0; }
  int size() const override { return 2; }
  std::string backend() const override { return "device-like"; }
  std::shared_ptr<Work> all_reduce(at::Tensor&, const AllReduceOptions&) override { return work(); }
  std::shared_ptr<Work> reduce_scatter(at::Tensor&, const at::Tensor&, const ReduceScatterOptions&) override {
    return work();
  }
  std::shared_ptr<Work> all_gather(at::Tensor&, const at::Tensor&, const CommOptions&) override { return work(); }
  std::shared_ptr<Work> broadcast(at::Tensor&, const BroadcastOptions&) override { return work(); }
  std::shared_ptr<Work> send(const at::Tensor&, const PointToPointOptions&) override { return work(); }
  std::shared_ptr<Work> recv(at::Tensor&, const PointToPointOptions&) override { return work(); }
  std::vector<std::shared_ptr<Work>> batch_p2p(std::vector<PointToPoint>& ops) override {
    return std::vector<std::shared_ptr<Work>>(ops.size(), work());
  }
  std::shared_ptr<Work> barrier(const CommOptions&) override { return work(); }

 private:
  std::shared_ptr<Work> work() { return std::make_shared<DeviceLikeWork>(running_); }
  const bool& running_;
};

std::string last_state(const FlightRecorder& flight) {
  const auto record = nlohmann::json::parse(flight.to_json(0, "test"));
  return record.at("ops").back().at("state").get<std::string>();
}

}  // namespace

TEST_CASE("on a device the flight record of a waited operation says completed only once the work is done",
          "[dist][wait]") {
  bool running = true;
  CommStats stats;
  FlightRecorder flight(16);
  // Host tensors stand in for a GPU's: operations end when their work says so.
  auto comm = make_counted_for_test(std::make_shared<DeviceLikeCommunicator>(running), "dp.0", {0, 1}, stats, flight,
                                    "cpu", /*ends_at_wait=*/false);
  at::Tensor t = at::ones({4});
  AllReduceOptions o;
  o.tag.plugin = "ddp";
  auto work = comm->all_reduce(t, o);
  CHECK(last_state(flight) == "issued");
  work->wait();
  CHECK(last_state(flight) == "started");  // the stream waits; the device has not finished
  stats.settle();
  CHECK(last_state(flight) == "started");
  running = false;
  stats.settle();
  CHECK(last_state(flight) == "completed");

  // On the CPU a wait that returns is the end of the operation.
  FlightRecorder cpu_flight(16);
  running = true;
  auto cpu = make_counted(std::make_shared<DeviceLikeCommunicator>(running), "dp", "dp.0", {0, 1}, stats, cpu_flight,
                          "cpu");
  cpu->all_reduce(t, o)->wait();
  CHECK(last_state(cpu_flight) == "completed");
}

TEST_CASE("a communicator refuses a tensor that is not on the rank's device and names who handed it", "[dist][device]") {
  bool running = false;
  CommStats stats;
  FlightRecorder flight(16);
  auto comm = make_counted(std::make_shared<DeviceLikeCommunicator>(running), "dp", "dp.0", {0, 1}, stats, flight,
                           "meta");
  at::Tensor on_meta = at::empty({4}, at::TensorOptions().device(at::kMeta));
  at::Tensor planted = at::ones({4});  // a host tensor where a GPU's would be
  AllReduceOptions o;
  o.tag = {"zero", "grad-sync", "bucket 1", 0};
  comm->all_reduce(on_meta, o)->wait();
  CHECK_THROWS_WITH(comm->all_reduce(planted, o),
                    "rank 0: the all_reduce on group dp.0 for zero grad-sync bucket 1 (microbatch 0) was handed a "
                    "tensor on cpu, but the group's tensors are on meta (the rank's device)");
  at::Tensor gathered = at::empty({8}, at::TensorOptions().device(at::kMeta));
  CHECK_THROWS_WITH(comm->all_gather(gathered, planted, {}),
                    Catch::Contains("all_gather on group dp.0 for unknown caller was handed an input tensor on cpu"));
  std::vector<PointToPoint> ops = {{PointToPoint::Kind::send, planted, {}}};
  CHECK_THROWS_WITH(comm->batch_p2p(ops), Catch::Contains("the send on group dp.0"));
  CHECK(stats.in_flight().empty());  // nothing was issued
}
