// plait's launcher and ranks as real processes over loopback: the files a run leaves,
// faults (a killed rank, a wrong port, a mesh that does not fit), and ranks started by
// torchrun-style variables.
#include <catch2/catch.hpp>

#include <signal.h>

#include <chrono>
#include <fstream>
#include <future>
#include <thread>

#include <nlohmann/json.hpp>

#include "distributed/core_binding.hpp"
#include "plait/sdk/error.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;
using Clock = std::chrono::steady_clock;

namespace {

const std::vector<std::string> kDdp2 = {"--set", "parallel.data=ddp", "--set", "parallel.dp=2"};

std::vector<std::string> args_with(std::vector<std::string> head, const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}


}  // namespace

TEST_CASE("the quickstart trains with two DDP ranks: loss falls, each rank logs, comm is counted", "[dist]") {
  TempDir dir;
  const auto out = dir / "run";
  ProcessResult r = run_plait({"run", source_path("configs/quickstart.toml"), "--steps", "40", "--out", out.string()});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("2 ranks (dp 2 x pp 1 x tp 1)") && Contains("step 40/40") && Contains("done: loss"));
  for (const char* f : {"config.lock.toml", "launcher.log", "rank-0.log", "rank-1.log", "ranks.json", "metrics.jsonl"}) {
    CHECK(fs::exists(out / f));
  }
  CHECK_THAT(read_file(out / "rank-1.log"), Contains("rank 1 of 2"));
  const auto m = read_metrics(out);
  REQUIRE(m.size() == 40);
  CHECK(m[0].at("tokens").get<int64_t>() == 2 * 8 * 64);  // the global batch
  CHECK(m.back().at("loss").get<double>() < m.front().at("loss").get<double>() - 1.0);
  CHECK(m[0].at("comm").at("dp.all_reduce").at("calls").get<int64_t>() >= 1);
  CHECK(m[0].at("comm_ms").get<double>() > 0.0);
  CHECK(m[0].at("comm_bytes_by").at("ddp").get<double>() > 0.0);
}

TEST_CASE("a killed rank stops the whole job within 30 s, and plait names it", "[dist]") {
  TempDir dir;
  const auto out = dir / "run";
  auto job = std::async(std::launch::async, [&] {
    return run_plait(args_with({"run", source_path("configs/quickstart.toml"), "--steps", "100000", "--out", out.string()}, {}));
  });
  // Wait until rank 1 is training, then kill it.
  const auto give_up = Clock::now() + std::chrono::seconds(60);
  int pid = -1;
  while (Clock::now() < give_up) {
    if (fs::exists(out / "ranks.json") && read_file(out / "rank-1.log").find("step ") != std::string::npos) {
      pid = nlohmann::json::parse(read_file(out / "ranks.json"))[1].at("pid").get<int>();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(pid > 0);
  const auto killed_at = Clock::now();
  ::kill(pid, SIGKILL);
  REQUIRE(job.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  const double seconds = std::chrono::duration<double>(Clock::now() - killed_at).count();
  ProcessResult r = job.get();
  INFO(r.output << "\nstopped " << seconds << " s after the kill");
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains(concat("rank 1 (pid ", pid, ", local rank 1 on node 0 of 1) was killed by signal 9")) &&
                           Contains("the other ranks were stopped") && Contains("last lines of") &&
                           Contains("rank-1.log") && Contains("| step "));
  CHECK(seconds < 30.0);
}

TEST_CASE("a stuck rank: the launcher's report says what the other ranks were waiting for", "[dist]") {
  TempDir dir;
  const auto out = dir / "run";
  auto job = std::async(std::launch::async, [&] {
    return run_plait({"run", source_path("configs/quickstart.toml"), "--steps", "100000", "--out", out.string(),
                      "--set", "distributed.hang_warning_s=1"});
  });
  const auto give_up = Clock::now() + std::chrono::seconds(60);
  int pid = -1;
  while (Clock::now() < give_up && pid < 0) {
    if (fs::exists(out / "ranks.json") && read_file(out / "rank-1.log").find("step ") != std::string::npos) {
      pid = nlohmann::json::parse(read_file(out / "ranks.json"))[1].at("pid").get<int>();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(pid > 0);
  ::kill(pid, SIGSTOP);  // rank 1 hangs; rank 0 waits for it in a collective
  const auto warned_by = Clock::now() + std::chrono::seconds(30);
  while (Clock::now() < warned_by && read_file(out / "rank-0.log").find("is still waiting") == std::string::npos) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  // The watchdog publishes within a second; a loaded machine (or a sanitizer) is slower.
  std::this_thread::sleep_for(std::chrono::milliseconds(3000));
  ::kill(pid, SIGKILL);
  REQUIRE(job.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  ProcessResult r = job.get();
  INFO(r.output);
  CHECK_THAT(read_file(out / "rank-0.log"), Contains("warning: rank 0 is still waiting: ") && Contains(" on group "));
  // Rank 1 may be stopped before any of a step's collectives: the gradient all-reduce
  // over dp.0 or the per-rank report over world.
  CHECK_THAT(r.output, Contains("operations ranks were waiting for:") && Contains("rank 0: ") &&
                           (Contains(" on group dp.0 for ") || Contains(" on group world for ")));
}

TEST_CASE("a rank given a wrong master port fails within its rendezvous timeout, naming the address", "[dist]") {
  TempDir dir;
  const int port = free_port();
  const auto start = Clock::now();
  ProcessResult r = run_plait(
      args_with({"run", source_path("configs/quickstart.toml"), "--out", (dir / "run").string(), "--set",
                 "distributed.rendezvous_timeout_s=3"},
                {}),
      {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(port)}});
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  INFO(r.output << "\ntook " << seconds << " s");
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains(concat("rank 1 (torchrun) could not reach the rendezvous store at 127.0.0.1:", port,
                                       " within 3 s")));
  // It gives up at its own 3 s, far below the 60 s default: the slack is process
  // start-up, which takes seconds on a loaded 2-core machine (CI measured 6.07 s once).
  CHECK(seconds < 3.0 + 20.0);
}

TEST_CASE("a mesh that does not multiply to the world size is refused before any rank starts", "[dist]") {
  TempDir dir;
  const auto out = dir / "run";
  ProcessResult r = run_plait(
      args_with({"run", source_path("configs/quickstart.toml"), "--nproc-per-node", "3", "--out", out.string()}, {}));
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains("[parallel] dp 2 x pp 1 x tp 1 = 2, but the job has 3 processes (--nproc-per-node 3)") &&
                           Contains("make dp x pp x tp = 3"));
  CHECK_FALSE(fs::exists(out));
  ProcessResult rest = run_plait(
      args_with({"run", source_path("configs/quickstart.toml"), "--set", "parallel.dp=-1", "--out", out.string()}, {}));
  CHECK_THAT(rest.output, Contains("a degree of -1 needs a known world size"));
  ProcessResult nodes = run_plait(
      args_with({"run", source_path("configs/quickstart.toml"), "--nnodes", "2", "--out", out.string()}, {}));
  CHECK_THAT(nodes.output, Contains("needs --master-addr and --master-port"));
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("ranks started with torchrun's variables train exactly as plait's launcher does", "[dist]") {
  TempDir dir;
  const int port = free_port();
  const auto ext = dir / "external", own = dir / "launched";
  auto rank = [&](int r) {
    return std::async(std::launch::async, [&, r] {
      return run_plait({"run", source_path("configs/quickstart.toml"), "--steps", "5", "--out", ext.string()},
                       {{"RANK", std::to_string(r)}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", std::to_string(r)},
                        {"LOCAL_WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(port)}});
    });
  };
  auto r0 = rank(0), r1 = rank(1);
  ProcessResult a = r0.get(), b = r1.get();
  INFO(a.output << "\n---\n" << b.output);
  REQUIRE(a.exit_code == 0);
  REQUIRE(b.exit_code == 0);
  for (const char* f : {"config.lock.toml", "metrics.jsonl", "rank-0.log", "rank-1.log"}) CHECK(fs::exists(ext / f));
  REQUIRE(run_plait({"run", source_path("configs/quickstart.toml"), "--steps", "5", "--out", own.string()}).exit_code == 0);
  const auto me = read_metrics(ext), mo = read_metrics(own);
  REQUIRE(me.size() == 5);
  REQUIRE(mo.size() == 5);
  for (int i = 0; i < 5; ++i) CHECK(me[i].at("loss").get<double>() == mo[i].at("loss").get<double>());
}

// Node 0's launcher hosts the store; if it left as soon as its own ranks did, node 1's
// launcher, still polling the store for aborts, would fail a job that succeeded. Repeated
// because the window is a race.
TEST_CASE("two launchers of one job (--nnodes 2 over loopback) both succeed, the store's host leaving last", "[dist]") {
  TempDir dir;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const int port = free_port();
    auto node = [&](int n) {
      return std::async(std::launch::async, [&, n] {
        const auto out = dir / concat("try", attempt, "-node", n);
        return run_plait(args_with({"run", source_path("configs/quickstart.toml"), "--steps", "3", "--nnodes", "2",
                                    "--node-rank", std::to_string(n), "--nproc-per-node", "1", "--master-addr",
                                    "127.0.0.1", "--master-port", std::to_string(port), "--out", out.string()},
                                   kDdp2));
      });
    };
    auto f0 = node(0), f1 = node(1);
    ProcessResult a = f0.get(), b = f1.get();
    INFO("attempt " << attempt << "\n" << a.output << "\n---\n" << b.output);
    REQUIRE(a.exit_code == 0);
    REQUIRE(b.exit_code == 0);
    CHECK_THAT(a.output, Contains("done: loss"));
    CHECK(read_metrics(dir / concat("try", attempt, "-node0")).size() == 3);
  }
}

TEST_CASE("bind_cores: each rank runs on its own cores, or the job is refused naming the cores", "[dist]") {
  TempDir dir;
  const auto out = dir / "run";
  const std::vector<int> cores = usable_cores();
  ProcessResult r = run_plait(args_with({"run", source_path("configs/quickstart.toml"), "--steps", "2", "--set",
                                         "distributed.bind_cores=true", "--out", out.string()},
                                        kDdp2));
  INFO(r.output);
  if (cores.size() < 2) {
    CHECK(r.exit_code != 0);
    CHECK_THAT(r.output, Contains("fewer than its 2 ranks"));
    return;
  }
  REQUIRE(r.exit_code == 0);
  // The ranks log the affinity the kernel reports after binding.
  for (int rank = 0; rank < 2; ++rank) {
    CHECK_THAT(read_file(out / concat("rank-", rank, ".log")),
               Contains(concat("rank ", rank, " (plait) bound to cores ", format_core_list(core_slice(cores, 2, rank)))));
  }
}
