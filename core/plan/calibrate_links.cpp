#include "plan/calibrate_links.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "config/resolve.hpp"
#include "distributed/rendezvous.hpp"
#include "loader/plugin_instance.hpp"
#include "plait/sdk/comm_backend.hpp"
#include "plait/sdk/error.hpp"

namespace plait {
namespace {

constexpr int64_t kSmallBytes = 4 << 10;   // latency
constexpr int64_t kLargeBytes = 16 << 20;  // bandwidth
constexpr int kReps = 8;

// Each op's median seconds at the small and the large size, as one member measures them.
struct Timings {
  std::vector<double> small, large;  // all_reduce, all_gather, reduce_scatter, send
  double overlap = 1.0;
};

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One operation of `bytes` (the full buffer, as collective_time.hpp counts it) on `c`.
void run_op(Communicator& c, int op, int64_t bytes) {
  const int n = c.size();
  const int64_t elements = bytes / 4, part = elements / n;
  if (op == 0) {
    at::Tensor t = at::ones({elements});
    c.all_reduce(t, {})->wait();
  } else if (op == 1) {
    at::Tensor out = at::empty({part * n});
    c.all_gather(out, at::ones({part}), {})->wait();
  } else if (op == 2) {
    at::Tensor out = at::empty({part});
    c.reduce_scatter(out, at::ones({part * n}), {})->wait();
  } else {
    // A message from member 0 to member 1 and back; half the round trip.
    at::Tensor t = at::ones({elements});
    if (c.rank() == 0) {
      c.send(t, {{}, 1, 0})->wait();
      c.recv(t, {{}, 1, 0})->wait();
    } else if (c.rank() == 1) {
      c.recv(t, {{}, 0, 0})->wait();
      c.send(t, {{}, 0, 0})->wait();
    }
  }
}

double time_op(Communicator& c, int op, int64_t bytes) {
  std::vector<double> runs;
  run_op(c, op, bytes);  // the first connects the pair or warms the buffers
  for (int r = 0; r < kReps; ++r) {
    c.barrier({})->wait();
    const auto start = std::chrono::steady_clock::now();
    run_op(c, op, bytes);
    runs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return median_of(runs) / (op == 3 ? 2.0 : 1.0);
}

// A large all-reduce issued, products run until as long as it takes alone, then waited
// for: how much of the shorter of the two the pair saved.
double overlap_of(Communicator& c, double all_reduce_s) {
  const at::Tensor a = at::randn({256, 256}), b = at::randn({256, 256});
  at::Tensor out = at::empty({256, 256});
  auto products = [&](int64_t n) {
    for (int64_t i = 0; i < n; ++i) at::mm_out(out, a, b);
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
    const double both = timed([&] {
      at::Tensor t = at::ones({kLargeBytes / 4});
      const std::shared_ptr<Work> w = c.all_reduce(t, {});
      products(n);
      w->wait();
    });
    saved.push_back((alone + all_reduce_s - both) / std::min(alone, all_reduce_s));
  }
  return std::clamp(median_of(saved), 0.0, 1.0);
}

Timings member(const PluginRegistry& registry, const std::string& plugin, const GroupSpec& spec) {
  const Options options = resolve_table(plugin_schema(*registry.find(plugin)), {}, Source::from_default()).options;
  auto backend = make_plugin<CommBackend>(registry, options, plugin, {}, {spec.group_rank, static_cast<int>(spec.ranks.size())});
  const std::shared_ptr<Communicator> c = backend.plugin->connect(spec);
  Timings t;
  for (int op = 0; op < 4; ++op) {
    t.small.push_back(time_op(*c, op, kSmallBytes));
    t.large.push_back(time_op(*c, op, kLargeBytes));
  }
  t.overlap = overlap_of(*c, t.large[0]);
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
        timings[static_cast<std::size_t>(r)] = member(registry, comm_plugin, spec);
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
  std::vector<double> overlaps;
  for (const Timings& member_t : timings) overlaps.push_back(member_t.overlap);
  f.overlap = median_of(overlaps);
  return f;
}

}  // namespace plait
