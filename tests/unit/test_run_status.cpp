// What a run folder says about its run in every launch mode: status.json (running,
// finished, failed with the reason), rank logs written as the ranks go, and ranks that are
// stopped, or lose their launcher, saying so. And `plait --version`.
#include <catch2/catch.hpp>

#include <signal.h>

#include <chrono>
#include <fstream>
#include <future>
#include <thread>

#include "plait/sdk/error.hpp"
#include "plait/sdk/version.hpp"
#include "output/run_status.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;
using Clock = std::chrono::steady_clock;

namespace {

nlohmann::json status_of(const fs::path& run) { return nlohmann::json::parse(read_file(run / "status.json")); }


// Waits until `file` holds `text` (a rank's log while it trains).
bool wait_for(const fs::path& file, const std::string& text, std::chrono::seconds limit = std::chrono::seconds(90)) {
  const auto give_up = Clock::now() + limit;
  while (Clock::now() < give_up) {
    if (fs::exists(file) && read_file(file).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

int parent_of(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string comm_and_before, state;
  int self = 0, parent = 0;
  stat >> self >> comm_and_before >> state >> parent;
  return parent;
}

bool alive(int pid) { return ::kill(pid, 0) == 0 && fs::exists("/proc/" + std::to_string(pid)); }

std::vector<int> rank_pids(const fs::path& run) {
  std::vector<int> out;
  for (const auto& r : nlohmann::json::parse(read_file(run / "ranks.json"))) out.push_back(r.at("pid").get<int>());
  return out;
}

}  // namespace

TEST_CASE("status.json: a finished run says finished at its last step, in one process and under the launcher",
          "[status]") {
  TempDir dir;
  for (const char* mode : {"single", "launcher"}) {
    INFO(mode);
    const auto out = dir / mode;
    const std::string data = std::string(mode) == "single" ? "parallel.data=single" : "parallel.data=ddp";
    const std::string dp = std::string(mode) == "single" ? "parallel.dp=1" : "parallel.dp=2";
    const ProcessResult r = run_quickstart(out, 3, {data, dp});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const nlohmann::json s = status_of(out);
    CHECK(s.at("state") == "finished");
    CHECK(s.at("step") == 3);
    CHECK(s.at("steps") == 3);
    CHECK(s.at("reason").is_null());
    CHECK(s.at("plait") == "0.1.0");
    CHECK(s.at("updated").get<std::string>() >= s.at("started").get<std::string>());
    for (const auto& e : fs::directory_iterator(out)) CHECK(e.path().string().find(".partial") == std::string::npos);
  }
}

TEST_CASE("under torchrun: rank logs are written as the ranks train, a stopped rank says so, rank 0 keeps the status",
          "[status]") {
  TempDir dir;
  const auto out = dir / "run";
  const int port = free_port();
  auto rank = [&](int r) {
    return std::async(std::launch::async, [&, r] {
      return run_plait({"run", source_path("configs/quickstart.toml"), "--steps", "100000", "--out", out.string()},
                       {{"RANK", std::to_string(r)}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", std::to_string(r)},
                        {"LOCAL_WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(port)}});
    });
  };
  auto r0 = rank(0), r1 = rank(1);
  // Live: rank 1's own log shows its steps while it trains.
  REQUIRE(wait_for(out / "rank-1.log", "step "));
  const nlohmann::json running = status_of(out);
  CHECK(running.at("state") == "running");
  // Stop rank 1 as torchrun would (SIGTERM); rank 0 then fails on its next collective.
  REQUIRE(r1.wait_for(std::chrono::seconds(0)) == std::future_status::timeout);
  // Rank 1's pid: the plait process started with this job's port and RANK=1.
  int pid = -1;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string environ = read_file(e.path() / "environ");
    if (environ.find("MASTER_PORT=" + std::to_string(port)) != std::string::npos &&
        environ.find(std::string("RANK=1") + '\0') != std::string::npos &&
        read_file(e.path() / "comm").find("plait") != std::string::npos) {
      pid = std::stoi(name);
    }
  }
  REQUIRE(pid > 0);
  ::kill(pid, SIGTERM);
  REQUIRE(r1.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  REQUIRE(r0.wait_for(std::chrono::seconds(120)) == std::future_status::ready);
  const ProcessResult a = r0.get(), b = r1.get();
  INFO(a.output << "\n---\n" << b.output);
  CHECK(b.exit_code == 128 + SIGTERM);
  CHECK_THAT(read_file(out / "rank-1.log"), Contains("rank 1 stops: it got signal 15 (Terminated)"));
  CHECK_THAT(b.output, Contains("rank 1 stops: it got signal 15"));
  CHECK(b.output.find("error: rank 1 stops") == std::string::npos);  // a stop asked for is no error
  CHECK(a.exit_code != 0);
  const nlohmann::json failed = status_of(out);
  CHECK(failed.at("state") == "failed");
  CHECK(failed.at("step").get<int>() >= 1);
  CHECK_FALSE(failed.at("reason").get<std::string>().empty());
}

TEST_CASE("a launcher killed with SIGKILL: its ranks stop, say why in their logs, and the status says failed",
          "[status]") {
  TempDir dir;
  const auto out = dir / "run";
  auto job = std::async(std::launch::async, [&] {
    return run_plait({"run", source_path("configs/quickstart.toml"), "--steps", "100000", "--out", out.string()});
  });
  REQUIRE(wait_for(out / "rank-1.log", "step "));
  const std::vector<int> ranks = rank_pids(out);
  const int launcher = parent_of(ranks.at(0));
  REQUIRE(launcher > 1);
  REQUIRE(parent_of(ranks.at(1)) == launcher);
  ::kill(launcher, SIGKILL);
  REQUIRE(job.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  const auto gone_by = Clock::now() + std::chrono::seconds(30);
  while (Clock::now() < gone_by && (alive(ranks[0]) || alive(ranks[1]))) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CHECK_FALSE(alive(ranks[0]));
  CHECK_FALSE(alive(ranks[1]));
  for (int rank = 0; rank < 2; ++rank) {
    CHECK_THAT(read_file(out / concat("rank-", rank, ".log")),
               Contains(concat("rank ", rank, " stops: its launcher (plait run) died without stopping it")));
  }
  const nlohmann::json s = status_of(out);
  CHECK(s.at("state") == "failed");
  CHECK(s.at("reason") == "rank 0 stops: its launcher (plait run) died without stopping it (killed?)");
  CHECK(s.at("step").get<int>() >= 1);
}

TEST_CASE("a one-process run killed before it could say so reads as failed, not running forever", "[status]") {
  TempDir dir;
  const auto out = dir / "run";
  auto job = std::async(std::launch::async, [&] {
    return run_plait({"run", source_path("configs/quickstart.toml"), "--steps", "100000", "--out", out.string(), "--set",
                      "parallel.dp=1"});
  });
  REQUIRE(wait_for(out / "metrics.jsonl", "\"step\":5,"));
  const auto live = read_run_status(out.string());
  REQUIRE(live.has_value());
  CHECK(live->state == "running");
  ::kill(static_cast<pid_t>(live->pid), SIGKILL);
  REQUIRE(job.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  CHECK(status_of(out).at("state") == "running");  // what the file still says
  const auto read = read_run_status(out.string());
  REQUIRE(read.has_value());
  CHECK(read->state == "failed");
  CHECK_THAT(read->reason, Contains(concat("its process (pid ", live->pid, ") ended without saying how, at step ")) &&
                               Contains(": it crashed or was killed"));
}

TEST_CASE("Ctrl-C or SIGTERM: a one-process run and a launcher's job stop as asked, exit 130 or 143, and the status "
          "says stopped at the last step that ended",
          "[status]") {
  TempDir dir;
  for (const int sig : {SIGINT, SIGTERM}) {
    for (const bool launcher : {false, true}) {
      const auto out = dir / concat("run-", sig, launcher ? "-launcher" : "-single");
      auto job = std::async(std::launch::async, [&] {
        return run_plait({"run", source_path("configs/quickstart.toml"), "--steps", "100000", "--out", out.string(),
                          "--set", launcher ? "parallel.dp=2" : "parallel.dp=1"});
      });
      REQUIRE(wait_for(out / "metrics.jsonl", "\"step\":30,"));
      // The one process writes its status itself; the launcher is its first rank's parent.
      const int target = launcher ? parent_of(rank_pids(out).at(0)) : status_of(out).at("pid").get<int>();
      ::kill(target, sig);
      const ProcessResult r = job.get();
      INFO(r.output);
      CHECK(r.exit_code == 128 + sig);
      const std::string said = launcher ? concat("stopped as asked (signal ", sig, ", ") : concat("plait run stops: it got signal ", sig);
      CHECK_THAT(r.output, Contains(said));
      // A stop asked for is no failure, and no hang: no error line, no flight paragraph.
      CHECK(r.output.find("error:") == std::string::npos);
      CHECK(r.output.find("Flight records") == std::string::npos);
      if (!launcher) CHECK_THAT(read_file(out / "run.log"), Contains(said));
      // Either way the stop says how to go on (quickstart saves no checkpoint before its end).
      CHECK_THAT(r.output, Contains("no checkpoint was saved"));
      const nlohmann::json s = status_of(out);
      CHECK(s.at("state") == "stopped");
      CHECK_THAT(s.at("reason").get<std::string>(), Contains(launcher ? "stopped as asked" : "plait run stops"));
      // Not the step written a second ago: the last that ended, as metrics.jsonl has it (or one more).
      CHECK(s.at("step").get<int64_t>() >= read_metrics(out).back().at("step").get<int64_t>());
      if (launcher) {
        const ProcessResult debug = run_plait({"debug", out.string()});
        INFO(debug.output);
        CHECK_THAT(debug.output, Contains(concat("The job stopped as asked (signal ", sig, ", ")) &&
                                     Contains("not what hung"));
      }
    }
  }
}

TEST_CASE("status.json while a job stops: \"stopping\" holds against a step that ends meanwhile, and gives way to how "
          "it ended",
          "[status]") {
  TempDir dir;
  const std::string folder = (dir / "run").string();
  fs::create_directories(folder);
  RunStatus status(folder, 10);
  status.running(3, /*now=*/true);
  status.stopping("rank 1 was killed by signal 9: stopping the others");
  auto now = read_run_status(folder);
  REQUIRE(now.has_value());
  CHECK(now->state == "stopping");
  CHECK(now->step == 3);
  status.running(4, /*now=*/true);  // the main thread ends a step while the ranks stop
  now = read_run_status(folder);
  CHECK(now->state == "stopping");
  CHECK(now->step == 4);
  status.failed("rank 1 was killed by signal 9");
  now = read_run_status(folder);
  CHECK(now->state == "failed");
  CHECK(now->step == 4);
  CHECK(now->reason == "rank 1 was killed by signal 9");
  // A stop asked for, in another folder: "stopped", at the step the caller knows ended.
  const std::string other = (dir / "other").string();
  fs::create_directories(other);
  RunStatus asked(other, 10);
  asked.stopping("interrupted by signal 2");
  asked.stopped("stopped as asked", 7);
  CHECK(read_run_status(other)->state == "stopped");
  CHECK(read_run_status(other)->step == 7);
}

TEST_CASE("plait --version names plait, LibTorch, the plugin API, CUDA, CPU math and the communicators", "[status]") {
  const ProcessResult r = run_plait({"--version"});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("plait 0.1.0\n") && Contains("LibTorch 2.11.0") &&
                           Contains(concat("plugin API ", PLAIT_API_VERSION_STRING, " (loads plugins built for ", PLAIT_API_MAJOR, ".0 to ")) && Contains("CUDA") &&
                           Contains(" threads, MKL reproducible (AUTO)\n") && Contains("communicators: gloo 1.0.0 (available), nccl 1.0.0 ("));
}
