// One rank of the communicator tests: joins a world through a comm plugin the way
// `plait run` does (rank 0 hosts the store), checks every operation's result against
// arithmetic, and exits 0 or prints what was wrong. Started N times by the tests.
//   comm_check <plugin> [cpu|cuda] [timeout-check|nccl-order]
// nccl-order: gloo with [gloo] p2p = "nccl" on 2 ranks; the send/recv ring goes through
// batch_p2p, then a message order that NCCL would mismatch, and a pair of lone sends
// that would deadlock, must each fail with the sentence that names them.
#include <cstdlib>
#include <functional>
#include <iostream>

#include <thread>

#include <ATen/ATen.h>

#include "distributed/launch_env.hpp"
#include "distributed/rendezvous.hpp"
#include "distributed/world.hpp"
#include "loader/plugin_instance.hpp"
#include "log/logging.hpp"
#include "plait/sdk/error.hpp"
#include "run/prepare.hpp"

using namespace plait;

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::cout << "FAILED: " << what << std::endl;
    ++failures;
  }
}

OpTag tag(const char* unit) { return {"comm_check", "test", unit, -1}; }

void check_all(Communicator& c, at::ScalarType dtype, const at::Device& device, bool batched) {
  const int n = c.size(), r = c.rank();
  const auto opts = at::TensorOptions().dtype(dtype).device(device);
  const std::string type = c10::toString(dtype);
  {  // all_reduce: sum, max, min
    at::Tensor t = at::full({5}, r + 1.0, opts);
    AllReduceOptions o;
    o.tag = tag("sum");
    c.all_reduce(t, o)->wait();
    expect(at::allclose(t, at::full({5}, n * (n + 1) / 2.0, opts)), "all_reduce sum " + type);
    at::Tensor m = at::full({3}, static_cast<double>(r), opts);
    o.op = ReduceOp::max;
    c.all_reduce(m, o)->wait();
    expect(at::equal(m, at::full({3}, n - 1.0, opts)), "all_reduce max " + type);
    o.op = ReduceOp::min;
    c.all_reduce(m, o)->wait();
    expect(at::equal(m, at::full({3}, n - 1.0, opts)), "all_reduce min " + type);
  }
  {  // reduce_scatter: rank r gets chunk r of the sum
    at::Tensor in = at::arange(n * 4, opts) + r;
    at::Tensor out = at::empty({4}, opts);
    ReduceScatterOptions o;
    o.tag = tag("reduce_scatter");
    c.reduce_scatter(out, in, o)->wait();
    at::Tensor expected = (at::arange(n * 4, opts) * n + n * (n - 1) / 2.0).narrow(0, r * 4, 4);
    expect(at::allclose(out, expected), "reduce_scatter " + type);
  }
  {  // all_gather: concatenation in rank order
    at::Tensor in = at::full({2}, static_cast<double>(r), opts);
    at::Tensor out = at::empty({2 * n}, opts);
    CommOptions o;
    o.tag = tag("all_gather");
    c.all_gather(out, in, o)->wait();
    expect(at::equal(out, at::arange(n, opts).repeat_interleave(2)), "all_gather " + type);
  }
  {  // broadcast from the last rank
    at::Tensor t = at::full({4}, static_cast<double>(r), opts);
    BroadcastOptions o;
    o.root = n - 1;
    o.tag = tag("broadcast");
    c.broadcast(t, o)->wait();
    expect(at::equal(t, at::full({4}, n - 1.0, opts)), "broadcast " + type);
  }
  if (n > 1) {  // send to the next rank, receive from the previous
    at::Tensor out = at::full({3}, r * 10.0, opts);
    at::Tensor in = at::empty({3}, opts);
    PointToPointOptions to, from;
    to.peer = (r + 1) % n;
    from.peer = (r + n - 1) % n;
    to.tag = from.tag = tag("ring");
    if (batched) {  // under NCCL's order every rank's lone send would wait for a receive queued behind it
      std::vector<PointToPoint> ops = {{PointToPoint::Kind::send, out, to}, {PointToPoint::Kind::recv, in, from}};
      for (auto& w : c.batch_p2p(ops)) w->wait();
    } else {
      auto receiving = c.recv(in, from);
      auto sending = c.send(out, to);
      sending->wait();
      receiving->wait();
    }
    expect(at::equal(in, at::full({3}, ((r + n - 1) % n) * 10.0, opts)), "send/recv ring " + type);
  }
  c.barrier({})->wait();
}

std::string failure_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no failure";
}

void expect_sentence(const std::string& what, const std::string& sentence) {
  expect(what.find(sentence) != std::string::npos, "expected \"" + sentence + "\" in: " + what);
}

// Two ranks; each check on a group of its own, since a failed group stays failed.
void check_nccl_order(World& world, int rank) {
  const auto opts = at::TensorOptions().dtype(at::kFloat);
  PointToPointOptions o;
  o.peer = 1 - rank;
  o.timeout = std::chrono::seconds(3);  // the operations meant to fail; joining and the rest keep the default
  o.tag = {"comm_check", "test", "order", -1};
  // Made first: a rank that fails early must not leave the other joining alone.
  Communicator& order = *world.subgroup(Axis::dp, "order", {0, 1});
  Communicator& cycle = *world.subgroup(Axis::dp, "cycle", {0, 1});
  // Rank 0 sends tag 1 then tag 2; rank 1 receives tag 2 first.
  at::Tensor a = at::full({3}, 1.0, opts), b = at::full({3}, 2.0, opts);
  const std::string mismatch = failure_of([&] {
    if (rank == 0) {
      o.tag_id = 1;
      auto first = order.send(a, o);
      o.tag_id = 2;
      auto second = order.send(b, o);
      first->wait();
      second->wait();
    } else {
      o.tag_id = 2;
      order.recv(b, o)->wait();
    }
  });
  if (rank == 1) {
    expect_sentence(mismatch, "[gloo] p2p = \"nccl\": on group dp.0.order, messages from rank 0 to rank 1 match out "
                              "of order: message 1 is rank 0's send for tag id 1 (12 bytes), but rank 1 posted it "
                              "for comm_check test order (tag id 2, 12 bytes)");
  } else {
    expect_sentence(mismatch, "rank 0's send to rank 1 for comm_check test order (message 1 to that rank) did not "
                              "complete within 3 s");
  }
  CommOptions patient;
  patient.timeout = std::chrono::seconds(20);
  world.group(Axis::dp)->barrier(patient)->wait();  // rank 1 found its mismatch at once, rank 0 timed out
  // Each rank sends before it receives, as two lone operations: a cycle under NCCL.
  o.tag = {"comm_check", "test", "cycle", -1};
  const std::string deadlock = failure_of([&] {
    auto sending = cycle.send(a, o);
    auto receiving = cycle.recv(b, o);
    sending->wait();
    receiving->wait();
  });
  expect_sentence(deadlock, concat("rank ", rank, "'s send to rank ", 1 - rank, " for comm_check test cycle (message "
                                   "1 to that rank) did not complete within 3 s"));
  world.group(Axis::dp)->barrier(patient)->wait();  // neither leaves while the other's cycle still waits
  std::cout << "rank " << rank << ": NCCL's order refused as expected: " << mismatch.substr(0, mismatch.find('\n'))
            << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string plugin = argc > 1 ? argv[1] : "gloo";
    const bool cuda = argc > 2 && std::string(argv[2]) == "cuda";
    const bool timeout_check = argc > 3 && std::string(argv[3]) == "timeout-check";
    const bool nccl_order = argc > 3 && std::string(argv[3]) == "nccl-order";
    auto worker = worker_from_env(std::nullopt, std::nullopt);
    PLAIT_CHECK(worker.has_value(), "comm_check needs RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT", "");
    const auto timeout = std::chrono::seconds(30);
    auto store = worker->rank == 0 ? JobStore::host(worker->master_port, worker->job_id, timeout, "")
                                   : JobStore::connect(worker->master_addr, worker->master_port, worker->job_id, timeout,
                                                       "comm_check", "");
    join_all_ranks(*store, worker->rank, worker->world_size, timeout);
    PluginRegistry registry = discover_plugins();
    const std::map<std::string, OptionValue> defaults = {{"threads", int64_t{2}}, {"high_priority_stream", false},
                                                         {"timing", true},
                                                         {"p2p", std::string(nccl_order ? "nccl" : "gloo")}};
    const Options options(plugin, defaults);
    auto backend = make_plugin<CommBackend>(registry, options, plugin, {}, {worker->rank, worker->world_size});
    DistSettings settings;
    settings.collective_timeout = std::chrono::seconds(timeout_check ? 2 : 30);
    MeshShape shape{1, worker->world_size, 1};
    const at::Device device = cuda ? at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(worker->local_rank))
                                   : at::Device(at::kCPU);
    auto world = World::join(*worker, std::move(store), shape, *backend.plugin, settings,
                             cuda ? concat("cuda:", worker->local_rank) : std::string("cpu"), core_log());
    Communicator& dp = world->group(Axis::dp) ? *world->group(Axis::dp) : *world->all();
    const std::string axis = world->group(Axis::dp) ? "dp" : "world";
    if (timeout_check) {
      // Rank 0 waits in an all-reduce the others never join: it must fail, naming the caller.
      if (worker->rank == 0) {
        at::Tensor t = at::ones({4}, at::TensorOptions().device(device));
        AllReduceOptions o;
        o.tag = {"comm_check", "lonely", "bucket 7", 3};
        try {
          dp.all_reduce(t, o)->wait();
          expect(false, "a collective nobody else joined completed");
        } catch (const Error& e) {
          const std::string what = e.what();
          std::cout << "timed out as expected: " << what.substr(0, what.find('\n')) << std::endl;
          expect(what.find("all_reduce of 16 B on group dp.0 for comm_check lonely bucket 7 (microbatch 3)") !=
                     std::string::npos,
                 "the timeout names the operation and who asked: " + what);
        }
      } else {
        std::this_thread::sleep_for(std::chrono::seconds(5));
      }
      return failures == 0 ? 0 : 1;
    }
    for (auto dtype : {at::kFloat, at::kDouble}) check_all(dp, dtype, device, nccl_order || plugin == "nccl");
    if (nccl_order) check_nccl_order(*world, worker->rank);
    // Every operation was counted, with the ring-algorithm volume.
    const auto drained = world->stats().drain();
    const auto& reduce = drained.by_op.at(axis + ".all_reduce");
    const int n = worker->world_size;
    expect(reduce.calls == 6, "all_reduce counted 6 times, got " + std::to_string(reduce.calls));
    const double expected = n == 1 ? 0.0 : 2.0 * (n - 1) / n * (5 * 4 + 3 * 4 + 3 * 4 + 5 * 8 + 3 * 8 + 3 * 8);
    expect(std::abs(reduce.bus_bytes - expected) < 1e-6,
           "all_reduce bus bytes " + std::to_string(reduce.bus_bytes) + " expected " + std::to_string(expected));
    expect(drained.bus_bytes_by_caller.count("comm_check") == 1, "the caller is recorded");
    if (plugin == "gloo") {
      try {
        at::Tensor t = at::ones({2});
        AllReduceOptions o;
        o.op = ReduceOp::avg;
        dp.all_reduce(t, o);
        expect(false, plugin + " accepted avg");
      } catch (const Error& e) {
        expect(std::string(e.what()).find("does not support the avg reduction") != std::string::npos, e.what());
      }
    }
    world->shut_down();  // as a run's clean end: every group, the last made first (NCCL: destroy, not abort)
    std::cout << "rank " << worker->rank << " of " << n << ": " << (failures ? "FAILED" : "all operations correct")
              << ", communicators shut down" << std::endl;
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::cout << "error: " << e.what() << std::endl;
    return 1;
  }
}
