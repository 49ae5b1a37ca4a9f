// The gloo communicator on real processes over loopback: every operation's result, its
// accounting, and a timeout that names who asked.
#include <catch2/catch.hpp>

#include "distributed/launch_env.hpp"
#include "distributed/supervisor.hpp"
#include "log/logging.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;

namespace {

// Starts `ranks` comm_check processes and supervises them like plait's launcher does.
void run_ranks(int ranks, const std::vector<std::string>& args, const TempDir& dir) {
  SupervisorSpec spec;
  spec.executable = std::string(PLAIT_BUILD_DIR) + "/bin/comm_check";
  spec.args = args;
  spec.run_dir = dir.path().string();
  spec.node = "the test";
  spec.console_rank = -1;
  const int port = 20000 + static_cast<int>(::getpid() % 20000);
  for (int r = 0; r < ranks; ++r) {
    WorkerEnv w;
    w.rank = r;
    w.world_size = ranks;
    w.local_rank = r;
    w.local_world_size = ranks;
    w.master_port = port;
    w.job_id = "gloo-test";
    auto env = worker_environment(w);
    env.erase("PLAIT_RUN_DIR");
    spec.ranks.push_back({r, r, env});
  }
  supervise(spec, core_log());
}

}  // namespace

TEST_CASE("gloo: every operation on 2 ranks is correct and counted", "[plugin.gloo]") {
  TempDir dir;
  REQUIRE_NOTHROW(run_ranks(2, {"gloo", "cpu"}, dir));
  CHECK_THAT(read_file(dir / "rank-1.log"), Contains("rank 1 of 2: all operations correct"));
}

TEST_CASE("gloo: every operation on 4 ranks is correct and counted", "[plugin.gloo]") {
  TempDir dir;
  REQUIRE_NOTHROW(run_ranks(4, {"gloo", "cpu"}, dir));
  CHECK_THAT(read_file(dir / "rank-3.log"), Contains("rank 3 of 4: all operations correct"));
}

TEST_CASE("gloo: a collective that times out names its group and its caller", "[plugin.gloo]") {
  TempDir dir;
  REQUIRE_NOTHROW(run_ranks(2, {"gloo", "cpu", "timeout-check"}, dir));
  CHECK_THAT(read_file(dir / "rank-0.log"), Contains("timed out as expected"));
}

TEST_CASE("gloo under NCCL's point-to-point order: batched pairs pass, a mismatched order and a cycle of sends fail "
          "naming them", "[plugin.gloo]") {
  TempDir dir;
  REQUIRE_NOTHROW(run_ranks(2, {"gloo", "cpu", "nccl-order"}, dir));
  CHECK_THAT(read_file(dir / "rank-1.log"), Contains("rank 1 of 2: all operations correct"));
  CHECK_THAT(read_file(dir / "rank-1.log"), Contains("rank 1: NCCL's order refused as expected: recv of 12 B on group dp.0.order for "
                                                      "comm_check test order failed: [gloo] p2p = \"nccl\": on group "
                                                      "dp.0.order, messages from rank 0 to rank 1 match out of order"));
}
