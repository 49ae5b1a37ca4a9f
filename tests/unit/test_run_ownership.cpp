// A run folder and a folder of checkpoints belong to one run: a run never writes into a
// folder another live run trains in, never saves into another run's checkpoints (whose
// latest it would move and whose keep_last would prune them), and never trains a finished
// run again from the start over its results. Each is refused before anything is written.
#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <thread>

#include "plait/sdk/error.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;
using Clock = std::chrono::steady_clock;

namespace {

std::vector<std::string> single(const fs::path& out, const std::string& steps, std::vector<std::string> sets = {}) {
  std::vector<std::string> args = {"run", source_path("configs/gpt2-tiny-single.toml"), "--steps", steps, "--out",
                                   out.string()};
  for (const auto& s : sets) {
    args.push_back("--set");
    args.push_back(s);
  }
  return args;
}

// Every file under `folder` with its bytes: what "untouched" is checked against.
std::map<std::string, std::string> contents(const fs::path& folder) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(folder)) {
    if (e.is_regular_file()) out[fs::relative(e.path(), folder).string()] = read_file(e.path());
  }
  return out;
}

}  // namespace

TEST_CASE("a second run into a folder a live run trains in is refused, naming it, and the first trains on", "[cli]") {
  TempDir dir;
  const fs::path out = dir / "run";
  auto first = std::async(std::launch::async, [&] {
    return run_plait(single(out, "300", {"checkpoint.resume=\"auto\"", "checkpoint.every=50"}));
  });
  const auto give_up = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < give_up && !fs::exists(out / "metrics.jsonl")) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const ProcessResult second = run_plait(single(out, "300", {"checkpoint.resume=\"auto\"", "checkpoint.every=50"}));
  const ProcessResult r = first.get();
  INFO(second.output << "\n---\n" << r.output);
  CHECK(second.exit_code == 1);
  CHECK_THAT(second.output, Contains(concat("the run folder ", out.string(), " is in use: a run is still training there (pid ")) &&
                                Contains("two runs never write into one folder"));
  CHECK(r.exit_code == 0);
  CHECK(read_metrics(out).size() == 300);
  // Once it has ended, the folder is free again: resume = "auto" continues it.
  const ProcessResult more = run_plait(single(out, "320", {"checkpoint.resume=\"auto\"", "checkpoint.every=50"}));
  INFO(more.output);
  CHECK(more.exit_code == 0);
  CHECK(read_metrics(out).size() == 320);
}

TEST_CASE("[checkpoint] dir naming another run's checkpoints is refused, and they are left as they were", "[cli]") {
  TempDir dir;
  REQUIRE(run_plait(single(dir / "a", "4", {"checkpoint.every=2", "checkpoint.keep_last=1"})).exit_code == 0);
  const auto before = contents(dir / "a");
  // Run a's own checkpoints/ folder (no owner file: the run folder's own).
  const ProcessResult into_a = run_plait(single(dir / "b", "4", {concat("checkpoint.dir=\"", (dir / "a" / "checkpoints").string(), "\"")}));
  INFO(into_a.output);
  CHECK(into_a.exit_code == 1);
  CHECK_THAT(into_a.output, Contains(concat("holds checkpoints that no run saving there claims")) &&
                                Contains(concat("--resume ", (dir / "a" / "checkpoints").string())));
  CHECK_FALSE(fs::exists(dir / "b"));
  // A shared folder that run c claimed.
  const std::string shared = concat("checkpoint.dir=\"", (dir / "shared").string(), "\"");
  REQUIRE(run_plait(single(dir / "c", "4", {shared, "checkpoint.every=2"})).exit_code == 0);
  CHECK(read_file(dir / "shared" / "owner") == fs::weakly_canonical(dir / "c").string() + "\n");
  const ProcessResult into_c = run_plait(single(dir / "d", "4", {shared}));
  CHECK(into_c.exit_code == 1);
  CHECK_THAT(into_c.output, Contains(concat("holds the checkpoints of the run in ", fs::weakly_canonical(dir / "c").string())) &&
                                Contains("keep_last prune its checkpoints"));
  // Run c continuing into its own [checkpoint] dir is its own business.
  const ProcessResult c_again = run_plait(single(dir / "c", "6", {shared, "checkpoint.every=2", "checkpoint.resume=\"auto\""}));
  INFO(c_again.output);
  CHECK(c_again.exit_code == 0);
  CHECK(contents(dir / "a") == before);
}

TEST_CASE("resume = \"auto\" on a finished run that kept no checkpoint is refused, its results untouched", "[cli]") {
  TempDir dir;
  const fs::path out = dir / "run";
  REQUIRE(run_plait(single(out, "3", {"checkpoint.final=false"})).exit_code == 0);
  const auto before = contents(out);
  const ProcessResult again = run_plait(single(out, "3", {"checkpoint.resume=\"auto\"", "checkpoint.final=false"}));
  INFO(again.output);
  CHECK(again.exit_code == 1);
  CHECK_THAT(again.output, Contains(concat("the run in ", out.string(), " finished (its status.json says so) and kept no "
                                           "checkpoint to resume from")));
  CHECK(contents(out) == before);
}
