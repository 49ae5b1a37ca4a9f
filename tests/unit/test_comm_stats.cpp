#include <catch2/catch.hpp>

#include <thread>

#include "distributed/comm_stats.hpp"

using namespace plait;

TEST_CASE("bus volume per rank follows the ring algorithms", "[dist]") {
  CHECK(CommStats::bus_factor("all_reduce", 4) == Approx(1.5));  // 2(n-1)/n
  CHECK(CommStats::bus_factor("all_gather", 4) == Approx(0.75));  // (n-1)/n
  CHECK(CommStats::bus_factor("reduce_scatter", 2) == Approx(0.5));
  CHECK(CommStats::bus_factor("broadcast", 4) == 1.0);
  CHECK(CommStats::bus_factor("all_reduce", 1) == 0.0);
}

TEST_CASE("operations are counted per axis and op, and by caller", "[dist]") {
  CommStats stats;
  const uint64_t a = stats.issue("dp", "all_reduce", "ddp", 100, 150.0, "a", [] { return true; });
  stats.issue("dp", "all_reduce", "core", 8, 12.0, "b", [] { return true; });
  stats.complete(a);
  stats.complete(a);  // idempotent
  auto d = stats.drain();
  CHECK(d.by_op.at("dp.all_reduce").calls == 2);
  CHECK(d.by_op.at("dp.all_reduce").payload_bytes == 108);
  CHECK(d.by_op.at("dp.all_reduce").bus_bytes == 162.0);
  CHECK(d.bus_bytes_by_caller.at("ddp") == 150.0);
  CHECK(stats.drain().by_op.empty());
}

TEST_CASE("an operation in flight too long is reported once, with its description", "[dist]") {
  CommStats stats;
  bool done = false;
  stats.issue("dp", "all_gather", "fsdp", 4, 3.0, "all_gather of 4 B on group dp.0 for fsdp param-gather h.7",
              [&] { return done; });
  CHECK(stats.newly_overdue(std::chrono::milliseconds(50)).empty());
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  auto overdue = stats.newly_overdue(std::chrono::milliseconds(50));
  REQUIRE(overdue.size() == 1);
  CHECK(overdue[0].find("fsdp param-gather h.7, in flight for") != std::string::npos);
  CHECK(stats.newly_overdue(std::chrono::milliseconds(50)).empty());  // once
  CHECK(stats.in_flight().size() == 1);
  done = true;
  stats.issue("dp", "barrier", "core", 0, 0.0, "x", [] { return true; });
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  stats.newly_overdue(std::chrono::milliseconds(50));  // finished without a waiter: cleared
  CHECK(stats.in_flight().empty());
}
