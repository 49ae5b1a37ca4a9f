#include "plan/calibrate_links.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
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
// Sizes between, each timed alone: the line through the small and the large size misses
// them (gloo's 1 MiB all-reduce took 1.5-2.3 ms here where the line says 1.2).
constexpr int64_t kMiddleBytes[] = {64 << 10, 256 << 10, 1 << 20, 4 << 20};

// Each op's mean seconds at the small, the middle and the large sizes, as one member
// measures them.
struct Timings {
  std::vector<double> small, large;  // all_reduce, all_gather, reduce_scatter, send
  std::vector<std::vector<double>> middle;  // each op's at kMiddleBytes
  double overlap = 1.0;
  double skew_us_per_sqrt_ms = 0;
};

double mean_of(const std::vector<double>& v) {
  double sum = 0;
  for (const double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

// Matrix products out of the core's cache, `n` of them (about 0.75 ms each here).
struct Products {
  std::vector<at::Tensor> a, b;
  Products() {
    for (int i = 0; i < 4; ++i) {
      a.push_back(at::randn({1024, 512}));
      b.push_back(at::randn({512, 512}));
    }
  }
  void run(int64_t n) const {
    for (int64_t i = 0; i < n; ++i) at::Tensor out = at::mm(a[i % 4], b[i % 4]);
  }
};

double timed(const std::function<void()>& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

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
  // A small one is cheap and its mean rests on the few slow ones among many.
  const int reps = bytes < kLargeBytes / kStream ? 16 * kReps : kReps;
  for (int r = 0; r < reps; ++r) {
    c.barrier({})->wait();
    runs.push_back(timed(run));
  }
  // The mean, not the median: a step's collectives add up, and this machine's occasional
  // slow one (a few ms, one in ten here: a core woken late) is part of their sum.
  return mean_of(runs) / (op == 3 ? 2.0 : static_cast<double>(copies));
}

// A blocking collective also waits for its slowest member. After products of the same
// count on every member, a 4 KiB all-reduce's wait beyond its own latency is how far
// apart the members finished; it grows as the square root of the products' time (each
// product's time varies on its own), so the figure is µs per √ms, fitted through the
// origin over 2 to 32 ms of products (220-360 µs per √ms here: 0.9-1.4 ms after 16 ms).
double skew_of(Communicator& c, double latency_s) {
  const Products products;
  const double one = timed([&] { products.run(8); }) / 8;
  at::Tensor t = at::ones({kSmallBytes / 4});
  double weighted = 0, spans = 0;
  for (const double ms : {2.0, 8.0, 32.0}) {
    const int64_t n = std::max<int64_t>(1, static_cast<int64_t>(ms * 1e-3 / one));
    std::vector<double> waits;
    for (int r = 0; r < 3 * kReps; ++r) {
      c.barrier({})->wait();
      products.run(n);
      waits.push_back(timed([&] { c.all_reduce(t, {})->wait(); }));
    }
    const double span_ms = static_cast<double>(n) * one * 1e3;
    weighted += std::max(0.0, (mean_of(waits) - latency_s) * 1e6) * std::sqrt(span_ms);
    spans += span_ms;
  }
  return weighted / spans;
}

// A large all-reduce issued, products run until as long as it takes alone, then waited
// for: how much of the shorter of the two the pair saved.
double overlap_of(Communicator& c, double all_reduce_s) {
  const Products products;
  const double one = timed([&] { products.run(8); }) / 8;
  const int64_t n = std::max<int64_t>(1, static_cast<int64_t>(all_reduce_s / one));
  std::vector<double> saved;
  for (int r = 0; r < kReps; ++r) {
    c.barrier({})->wait();
    const double alone = timed([&] { products.run(n); });
    c.barrier({})->wait();
    at::Tensor t = at::ones({kLargeBytes / 4});
    const double both = timed([&] {
      const std::shared_ptr<Work> w = c.all_reduce(t, {});
      products.run(n);
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
    t.middle.emplace_back();
    for (const int64_t bytes : kMiddleBytes) t.middle.back().push_back(time_op(*c, op, bytes, 1));
    t.large.push_back(time_op(*c, op, kLargeBytes / kStream, kStream) * kStream);
  }
  if (overlap) t.overlap = overlap_of(*c, t.large[0]);
  t.skew_us_per_sqrt_ms = skew_of(*c, t.small[0]);
  c->barrier({})->wait();
  return t;
}

// Bus bandwidth as nccl-tests reports it, from the large size's time less the latency;
// and the time at each size measured, by the bytes each member moves.
CollectiveCost cost_of(const Timings& t, int op, double share) {
  const double small_s = t.small[op], large_s = t.large[op];
  const double transfer = std::max(large_s - small_s, 1e-9);
  CollectiveCost c{small_s * 1e6, static_cast<double>(kLargeBytes) * share / transfer / 1e9, {}, {}};
  auto point = [&](int64_t bytes, double seconds) {
    c.bus_kib.push_back(static_cast<double>(bytes) * share / 1024.0);
    c.times_us.push_back(seconds * 1e6);
  };
  point(kSmallBytes, small_s);
  for (std::size_t i = 0; i < std::size(kMiddleBytes); ++i) point(kMiddleBytes[i], t.middle[op][i]);
  point(kLargeBytes, large_s);
  return c;
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
  f.links.all_reduce = cost_of(t, 0, 2 * (n - 1) / n);
  f.links.all_gather = cost_of(t, 1, (n - 1) / n);
  f.links.reduce_scatter = cost_of(t, 2, (n - 1) / n);
  f.links.send = cost_of(t, 3, 1.0);
  std::vector<double> skews;
  for (const Timings& member_t : timings) skews.push_back(member_t.skew_us_per_sqrt_ms);
  f.skew_us_per_sqrt_ms = mean_of(skews);
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
