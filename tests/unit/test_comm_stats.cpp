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

TEST_CASE("an operation whose wait returned while it still runs on the device stays in flight until it ends, "
          "timed by the device, its wait counted as exposed",
          "[dist]") {
  CommStats stats;
  bool on_device = true;
  const uint64_t id =
      stats.issue("dp", "all_reduce", "ddp", 1024, 1536.0, "all_reduce of 1.0 KiB on group dp.0 for ddp bucket 0",
                  [] { return false; });
  stats.waited(id, 0.25,
               HeldOp{.is_completed = [&] { return !on_device; }, .device_seconds = [] { return std::optional(2.0); }});
  REQUIRE(stats.in_flight().size() == 1);  // as NCCL's wait() only orders the stream
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  const auto overdue = stats.newly_overdue(std::chrono::milliseconds(50));
  REQUIRE(overdue.size() == 1);
  CHECK(overdue[0].rfind("all_reduce of 1.0 KiB on group dp.0 for ddp bucket 0, waited for and still running on the "
                         "device, in flight for ",
                         0) == 0);
  stats.settle();
  CHECK(stats.in_flight().size() == 1);
  on_device = false;
  stats.settle();
  CHECK(stats.in_flight().empty());
  const auto d = stats.drain();
  CHECK(d.by_op.at("dp.all_reduce").seconds == 2.0);  // the device's time, not the host's
  CHECK(d.by_op.at("dp.all_reduce").exposed_seconds == 0.25);
}

TEST_CASE("an operation done when its wait returns is timed from issue, or by the device where it says", "[dist]") {
  CommStats stats;
  const uint64_t host_timed = stats.issue("pp", "send", "core", 8, 8.0, "a", [] { return true; });
  const uint64_t device_timed = stats.issue("pp", "recv", "core", 8, 8.0, "b", [] { return true; });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  stats.waited(host_timed, 0.001, HeldOp{.is_completed = [] { return true; }, .device_seconds = [] {
                                           return std::optional<double>();
                                         }});
  stats.waited(device_timed, 0.001,
               HeldOp{.is_completed = [] { return true; }, .device_seconds = [] { return std::optional(0.5); }});
  CHECK(stats.in_flight().empty());
  const auto d = stats.drain();
  CHECK(d.by_op.at("pp.send").seconds >= 0.02);
  CHECK(d.by_op.at("pp.send").seconds < 0.5);
  CHECK(d.by_op.at("pp.recv").seconds == 0.5);
}
