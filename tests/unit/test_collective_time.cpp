// The planner's alpha-beta model of a collective: latency plus the bytes each rank moves
// over the bus bandwidth the group gets, within a node or across nodes (k rings through k
// NICs, capped by the node's links).
#include <catch2/catch.hpp>

#include "plait/sdk/error.hpp"
#include "plan/collective_time.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::WithinRel;

TEST_CASE("a collective takes its latency plus the bytes nccl-tests' bus bandwidth moves", "[plan]") {
  const Hardware a100 = load_hardware("a100-80g");  // in a node: 230 GB/s; across: 23 GB/s per GPU
  const double gb = 1e9;
  // All-reduce of 1 GB on the 8 GPUs of a node: each moves 2 * 7/8 of it.
  CHECK_THAT(collective_seconds(a100, Collective::all_reduce, gb, {8, 8}), WithinRel(15e-6 + 1.75 / 230.0, 1e-12));
  // All-gather of a 1 GB output on 4 of them: 3/4 of it.
  CHECK_THAT(collective_seconds(a100, Collective::all_gather, gb, {4, 4}), WithinRel(12e-6 + 0.75 / 230.0, 1e-12));
  // Data parallel over 4 nodes with all 8 GPUs of each: 8 rings through 8 NICs (184 GB/s).
  CHECK(group_bus_gbps(a100, Collective::all_reduce, {32, 8}) == 184.0);
  CHECK_THAT(collective_seconds(a100, Collective::all_reduce, gb, {32, 8}),
             WithinRel(30e-6 + 2.0 * 31 / 32 / 184.0, 1e-12));
  // With tensor parallel 8 filling each node, a data-parallel group has one GPU per node.
  CHECK(group_bus_gbps(a100, Collective::reduce_scatter, {16, 1}) == 23.0);
  // The node's links cap what many NICs could carry (H100: 8 * 45 = 360 < 400, A100 4 * 23 < 230).
  const Hardware h100 = load_hardware("h100-sxm");
  CHECK(group_bus_gbps(h100, Collective::all_reduce, {64, 8}) == 360.0);
  CHECK(group_bus_gbps(load_hardware("b200"), Collective::all_reduce, {64, 8}) == 360.0);
  CHECK(group_bus_gbps(h100, Collective::all_gather, {4, 4}) == 370.0);
  // A send between nodes goes through one NIC, whatever the group.
  CHECK_THAT(collective_seconds(a100, Collective::send, 2.3e7, {2, 1}), WithinRel(10e-6 + 1e-3, 1e-12));
  // Nothing to do alone or for nothing.
  CHECK(collective_seconds(a100, Collective::all_reduce, gb, {1, 1}) == 0.0);
  CHECK(collective_seconds(a100, Collective::all_reduce, 0, {8, 8}) == 0.0);
}

// A calibrated machine's times at some sizes replace the line through its latency and
// bandwidth: interpolated between them, the first's below, the bandwidth past the last.
TEST_CASE("a collective's times measured at some sizes are interpolated between them", "[plan]") {
  TempDir dir;
  const auto file = write_file(dir / "box.toml", concat("extends = \"", shipped_hardware_dir(), "/a100-80g.toml\"\n",
                                                             "[intra_node]\nall_reduce_us = 300.0\n"
                                                             "all_reduce_busbw_gbps = 1.0\n"
                                                             "all_reduce_bus_kib = [4.0, 1024.0, 4096.0]\n"
                                                             "all_reduce_times_us = [300.0, 2500.0, 4000.0]\n"));
  const Hardware box = load_hardware(file.string());
  const GroupPlacement pair{2, 2};  // an all-reduce over 2 moves the whole buffer
  CHECK_THAT(collective_seconds(box, Collective::all_reduce, 1 << 20, pair), WithinRel(2500e-6, 1e-12));
  CHECK_THAT(collective_seconds(box, Collective::all_reduce, 2560.0 * 1024, pair), WithinRel(3250e-6, 1e-12));
  CHECK_THAT(collective_seconds(box, Collective::all_reduce, 8, pair), WithinRel(300e-6, 1e-12));
  CHECK_THAT(collective_seconds(box, Collective::all_reduce, 8 << 20, pair), WithinRel(4000e-6 + 4194304 / 1e9, 1e-12));
  // Over 4 members each moves 1.5 times the buffer: 1 MiB is 1.5 MiB on the bus.
  CHECK_THAT(collective_seconds(box, Collective::all_reduce, 1 << 20, {4, 4}), WithinRel(2750e-6, 1e-12));
  // The other collectives, without times, keep the line: all-gather 12 us + bytes at 230 GB/s.
  CHECK_THAT(collective_seconds(box, Collective::all_gather, 1e9, {4, 4}), WithinRel(12e-6 + 0.75 / 230.0, 1e-12));
}
