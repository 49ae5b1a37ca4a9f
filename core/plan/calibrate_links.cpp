#include "plan/calibrate_links.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "compare/comparison.hpp"
#include "config/resolve.hpp"
#include "distributed/rendezvous.hpp"
#include "loader/plugin_instance.hpp"
#include "plait/sdk/comm_backend.hpp"
#include "plait/sdk/error.hpp"

namespace plait {
namespace {

constexpr int64_t kSmallBytes = 4 << 10;   // latency
constexpr int64_t kLargeBytes = 32 << 20;  // bandwidth: the bytes of a stream of
constexpr int kStream = 4;                  // operations issued back to back, 8 MiB each
constexpr int kReps = 8;

// Each op's median seconds at the small and the large size, as one member measures them.
struct Timings {
  std::vector<double> small, large;  // all_reduce, all_gather, reduce_scatter, send
  double overlap = 1.0;
};

// `copies` operations of `bytes` each (the full buffer, as collective_time.hpp counts it)
// on `c`, issued back to back and then waited for, as nccl-tests times its iterations and
// as a data plugin issues its buckets (gloo works on several at once); their tensors made
// once: what is timed is the collectives, not the allocation.
std::function<void()> prepared_op(Communicator& c, int op, int64_t bytes, int copies) {
  const int n = c.size();
  const int64_t elements = bytes / 4, part = elements / n;
  if (op == 3) {  // a message from member 0 to member 1 and back
    return [&c, t = at::ones({elements})]() mutable {
      if (c.rank() == 0) {
        c.send(t, {{}, 1, 0})->wait();
        c.recv(t, {{}, 1, 0})->wait();
      } else if (c.rank() == 1) {
        c.recv(t, {{}, 0, 0})->wait();
        c.send(t, {{}, 0, 0})->wait();
      }
    };
  }
  std::vector<at::Tensor> in, out;
  for (int i = 0; i < copies; ++i) {
    in.push_back(at::ones({op == 1 ? part : elements}));
    out.push_back(at::empty({op == 1 ? elements : op == 2 ? part : 0}));
  }
  return [&c, op, in, out]() mutable {
    std::vector<std::shared_ptr<Work>> works;
    for (std::size_t i = 0; i < in.size(); ++i) {
      if (op == 0) works.push_back(c.all_reduce(in[i], {}));
      if (op == 1) works.push_back(c.all_gather(out[i], in[i], {}));
      if (op == 2) works.push_back(c.reduce_scatter(out[i], in[i], {}));
    }
    for (const auto& w : works) w->wait();
  };
}

// Seconds per operation (a send: one way).
double time_op(Communicator& c, int op, int64_t bytes, int copies) {
  std::function<void()> run = prepared_op(c, op, bytes, copies);
  std::vector<double> runs;
  run();  // the first connects the pair or warms the buffers
  const int reps = bytes < kLargeBytes / kStream ? 4 * kReps : kReps;  // a small one's time jitters more
  for (int r = 0; r < reps; ++r) {
    c.barrier({})->wait();
    const auto start = std::chrono::steady_clock::now();
    run();
    runs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return compare::spread_of(runs).median / (op == 3 ? 2.0 : static_cast<double>(copies));
}

// A large all-reduce issued, products run until as long as it takes alone, then waited
// for: how much of the shorter of the two the pair saved.
double overlap_of(Communicator& c, double all_reduce_s) {
  std::vector<at::Tensor> a, b;
  for (int i = 0; i < 4; ++i) {
    a.push_back(at::randn({1024, 512}));
    b.push_back(at::randn({512, 512}));
  }
  auto products = [&](int64_t n) {
    for (int64_t i = 0; i < n; ++i) at::Tensor out = at::mm(a[i % 4], b[i % 4]);
  };
  auto timed = [](const std::function<void()>& f) {
    const auto start = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const double one = timed([&] { products(8); }) / 8;
  const int64_t n = std::max<int64_t>(1, static_cast<int64_t>(all_reduce_s / one));
  std::vector<double> saved;
  for (int r = 0; r < kReps; ++r) {
    c.barrier({})->wait();
    const double alone = timed([&] { products(n); });
    c.barrier({})->wait();
    at::Tensor t = at::ones({kLargeBytes / 4});
    const double both = timed([&] {
      const std::shared_ptr<Work> w = c.all_reduce(t, {});
      products(n);
      w->wait();
    });
    saved.push_back((alone + all_reduce_s - both) / std::min(alone, all_reduce_s));
  }
  return std::clamp(compare::spread_of(saved).median, 0.0, 1.0);
}

Timings member(const PluginRegistry& registry, const std::string& plugin, const GroupSpec& spec, bool overlap) {
  const Options options = resolve_table(plugin_schema(*registry.find(plugin)), {}, Source::from_default()).options;
  auto backend = make_plugin<CommBackend>(registry, options, plugin, {}, {spec.group_rank, static_cast<int>(spec.ranks.size())});
  const std::shared_ptr<Communicator> c = backend.plugin->connect(spec);
  Timings t;
  for (int op = 0; op < 4; ++op) {
    t.small.push_back(time_op(*c, op, kSmallBytes, 1));
    t.large.push_back(time_op(*c, op, kLargeBytes / kStream, kStream) * kStream);
  }
  if (overlap) t.overlap = overlap_of(*c, t.large[0]);
  c->barrier({})->wait();
  return t;
}

// Bus bandwidth as nccl-tests reports it, from the large size's time less the latency.
CollectiveCost cost_of(double small_s, double large_s, double share) {
  const double transfer = std::max(large_s - small_s, 1e-9);
  return {small_s * 1e6, static_cast<double>(kLargeBytes) * share / transfer / 1e9};
}

}  // namespace

LinkFigures measure_links(const PluginRegistry& registry, const std::string& comm_plugin, int ranks) {
  PLAIT_CHECK(ranks >= 2, concat("calibrating collectives between ", ranks, " rank(s)"), "it takes 2 or more");
  PLAIT_CHECK(registry.find(comm_plugin) != nullptr, concat("no comm plugin named '", comm_plugin, "' was found"),
              "`plait plugins` lists what was found");
  const auto timeout = std::chrono::seconds(60);
  const std::unique_ptr<JobStore> store = JobStore::host(0, "calibrate", timeout, "");
  std::vector<Timings> timings(static_cast<std::size_t>(ranks));
  std::vector<std::exception_ptr> failures(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  const bool spare_cores = static_cast<unsigned>(ranks) < std::thread::hardware_concurrency();
  const int intra_op = at::get_num_threads();
  at::set_num_threads(1);  // each member computes on its own thread, as a CPU rank does
  for (int r = 0; r < ranks; ++r) {
    GroupSpec spec;
    spec.store_host = "127.0.0.1";
    spec.store_port = store->port();
    spec.store_prefix = "plait/calibrate/world/";
    spec.name = "world";
    for (int i = 0; i < ranks; ++i) spec.ranks.push_back(i);
    spec.group_rank = r;
    spec.timeout = timeout;
    threads.emplace_back([&, spec, r] {
      try {
        timings[static_cast<std::size_t>(r)] = member(registry, comm_plugin, spec, spare_cores);
      } catch (...) {
        failures[static_cast<std::size_t>(r)] = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  at::set_num_threads(intra_op);
  for (const std::exception_ptr& f : failures) {
    if (f) std::rethrow_exception(f);
  }
  const Timings& t = timings.front();
  const double n = ranks;
  LinkFigures f;
  f.links.all_reduce = cost_of(t.small[0], t.large[0], 2 * (n - 1) / n);
  f.links.all_gather = cost_of(t.small[1], t.large[1], (n - 1) / n);
  f.links.reduce_scatter = cost_of(t.small[2], t.large[2], (n - 1) / n);
  f.links.send = cost_of(t.small[3], t.large[3], 1.0);
  if (!spare_cores) {
    f.overlap = 0;
    f.overlap_source = concat("comm_overlap: 0, not measured: each of the ", ranks,
                              " ranks computes on a core of its own, so a collective's copies and sums take their "
                              "time from a rank's computation");
    return f;
  }
  std::vector<double> overlaps;
  for (const Timings& member_t : timings) overlaps.push_back(member_t.overlap);
  f.overlap = compare::spread_of(overlaps).median;
  f.overlap_source = "comm_overlap: products out of the core's cache run beside a 32 MiB all-reduce, the share of the "
                     "shorter saved";
  return f;
}

}  // namespace plait
