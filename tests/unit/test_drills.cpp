// Drills that cannot lie, and what a run says after a fault: real jobs over loopback.
// A fault that could never strike is refused before launch, and one that never struck
// fails the run that said nothing of it; a damaged newest checkpoint is passed over by
// resume = "auto" and --resume RUN as a restart passes over it; a hung rank's restart is
// recorded with the rank that hung (not the one whose timeout reported it) and `plait
// debug` reports every start of the job, newest first; a failed job's status says the
// last step that ended.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "plait/sdk/error.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;

namespace {

std::vector<std::string> quickstart(const fs::path& out, const std::string& steps, std::vector<std::string> more = {}) {
  std::vector<std::string> args = {"run", source_path("configs/quickstart.toml"), "--steps", steps, "--out", out.string()};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

nlohmann::json json_of(const fs::path& file) { return nlohmann::json::parse(read_file(file)); }

// Flips a byte in the middle of rank 0's file of the checkpoint, as a bad disk would.
void damage(const fs::path& checkpoint) {
  const fs::path file = checkpoint / "rank-0.safetensors";
  REQUIRE(fs::exists(file));
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  const auto middle = static_cast<std::streamoff>(fs::file_size(file) / 2);
  char byte = 0;
  f.seekg(middle);
  f.read(&byte, 1);
  byte = static_cast<char>(~byte);
  f.seekp(middle);
  f.write(&byte, 1);
}

}  // namespace

TEST_CASE("a fault that could never strike is refused before anything starts: a group the job lacks, a corrupt of a "
          "step that saves nothing",
          "[drill]") {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"kill rank=0 op=tp.0#1", "is on group tp.0, which rank 0 is not in: it would never happen (rank 0's groups: world, dp.0)"},
      {"corrupt rank=1 step=3", "spoils the checkpoint of step 3, but this run saves none at step 3"},
      {"hang rank=1 op=dp.1#2", "is on group dp.1, which rank 1 is not in"},
  };
  for (const auto& [fault, said] : cases) {
    INFO(fault);
    const fs::path out = dir / "never";
    const ProcessResult r = run_plait(quickstart(out, "4", {"--set", "debug.faults=[\"" + fault + "\"]"}));
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Contains("fault '" + fault + "' " + said));
    CHECK_THAT(r.output, Contains("error: --set debug.faults="));
    CHECK_FALSE(fs::exists(out));
  }
}

// A one-process job has no launcher unless it needs one: a restart, or a fault whose end
// someone must record (the process that exits cannot say so in its status).
TEST_CASE("a one-process job with restarts or faults runs under the launcher: an exit is restarted or recorded as the "
          "failure it is",
          "[drill]") {
  TempDir dir;
  const std::string config = source_path("configs/gpt2-tiny-single.toml");
  auto single = [&](const fs::path& out, std::vector<std::string> more) {
    std::vector<std::string> args = {"run", config, "--steps", "4", "--out", out.string(), "--set",
                                     "debug.faults=[\"exit rank=0 step=3\"]", "--set", "checkpoint.every=1"};
    args.insert(args.end(), more.begin(), more.end());
    return run_plait(args);
  };
  const ProcessResult restarted = single(dir / "restarted", {"--max-restarts", "1"});
  INFO(restarted.output);
  CHECK(restarted.exit_code == 0);
  CHECK(json_of(dir / "restarted" / "status.json").at("state") == "finished");
  CHECK(json_of(dir / "restarted" / "restarts.json").at(0).at("resumed_from_step") == 2);
  const ProcessResult failed = single(dir / "failed", {});
  INFO(failed.output);
  CHECK(failed.exit_code == 1);
  CHECK_THAT(failed.output, Contains("exited with code 1"));
  const auto status = json_of(dir / "failed" / "status.json");
  CHECK(status.at("state") == "failed");
  CHECK(status.at("step") == 2);
  // A fault with nothing to break in one process is refused before anything starts.
  const ProcessResult abort = run_plait({"run", config, "--steps", "4", "--out", (dir / "abort").string(), "--set",
                                         "debug.faults=[\"abort rank=0 step=2\"]"});
  CHECK(abort.exit_code == 1);
  CHECK_THAT(abort.output, Contains("breaks a collective, but rank 0 issues none (this job has one rank)"));
  CHECK_FALSE(fs::exists(dir / "abort"));
}

TEST_CASE("a fault that never struck fails the run that trained through it, saying which and why, under the launcher "
          "and in one process",
          "[drill]") {
  TempDir dir;
  SECTION("a collective number the job never reaches, on 2 ranks") {
    const fs::path out = dir / "launcher";
    const ProcessResult r = run_plait(quickstart(out, "3", {"--set", "debug.faults=[\"kill rank=1 op=dp.0#100000\"]"}));
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Contains("the training ended, but an injected fault never struck, so this drill tested nothing: "
                                  "'kill rank=1 op=dp.0#100000'") &&
                             Contains("rank 1 never issued collective #100000 on group dp.0"));
    const auto status = json_of(out / "status.json");
    CHECK(status.at("state") == "failed");
    CHECK(status.at("step") == 3);
    CHECK_THAT(status.at("reason").get<std::string>(), Contains("never struck"));
  }
  SECTION("an attempt the job never makes, in one process") {
    const fs::path out = dir / "single";
    const ProcessResult r = run_plait(quickstart(
        out, "3", {"--set", "parallel.dp=1", "--max-restarts", "1", "--set", "debug.faults=[\"exit rank=0 step=2 attempt=1\"]"}));
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Contains("'exit rank=0 step=2 attempt=1'") && Contains("the job made 0 restart(s), never attempt 1"));
    CHECK(json_of(out / "status.json").at("state") == "failed");
  }
  SECTION("a fault that struck passes: a slow rank") {
    const fs::path out = dir / "slow";
    const ProcessResult r = run_plait(quickstart(out, "3", {"--set", "debug.faults=[\"slow rank=1 step=2 ms=10\"]"}));
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK_THAT(read_file(out / "faults.jsonl"), Contains("\"fault\":\"slow rank=1 step=2 ms=10\""));
  }
}

TEST_CASE("a damaged newest checkpoint: resume = \"auto\" and --resume RUN take the one before, saying why, and train "
          "on as the uninterrupted run, while a checkpoint named itself is still refused",
          "[drill]") {
  TempDir dir;
  const std::vector<std::string> every2 = {"--set", "checkpoint.every=2"};
  const ProcessResult straight = run_plait(quickstart(dir / "straight", "6", every2));
  REQUIRE(straight.exit_code == 0);
  const ProcessResult first = run_plait(quickstart(dir / "a", "4", every2));
  REQUIRE(first.exit_code == 0);
  damage(dir / "a" / "checkpoints" / "step-4");
  const auto expect_steps_3_to_6 = [&](const fs::path& run) {
    std::map<int64_t, nlohmann::json> want;
    for (const auto& m : read_metrics(dir / "straight")) want[m.at("step").get<int64_t>()] = m.at("loss");
    std::vector<int64_t> steps;
    for (const auto& m : read_metrics(run)) {
      const int64_t step = m.at("step").get<int64_t>();
      if (step <= 2) continue;
      steps.push_back(step);
      CHECK(m.at("loss") == want.at(step));
    }
    CHECK(steps == std::vector<int64_t>{3, 4, 5, 6});
  };
  SECTION("--resume RUN") {
    const ProcessResult r = run_plait(quickstart(dir / "b", "6", {"--set", "checkpoint.every=2", "--resume", (dir / "a").string()}));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.output, Contains("resume: passed over checkpoint step-4: ") && Contains("checksum"));
    expect_steps_3_to_6(dir / "b");
  }
  SECTION("resume = \"auto\" on the run's own folder") {
    const ProcessResult r =
        run_plait(quickstart(dir / "a", "6", {"--set", "checkpoint.every=2", "--set", "checkpoint.resume=\"auto\""}));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.output, Contains("resume: passed over checkpoint step-4: "));
    expect_steps_3_to_6(dir / "a");
  }
  SECTION("--resume of the damaged checkpoint itself") {
    const ProcessResult r =
        run_plait(quickstart(dir / "c", "6", {"--resume", (dir / "a" / "checkpoints" / "step-4").string()}));
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Contains("checksum"));
    CHECK_FALSE(fs::exists(dir / "c"));
  }
  SECTION("a fault at a step the resume passes is refused") {
    const ProcessResult r = run_plait(quickstart(
        dir / "d", "6", {"--resume", (dir / "a").string(), "--set", "debug.faults=[\"kill rank=0 step=2\"]"}));
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Contains("fault 'kill rank=0 step=2' is at step 2, but this run resumes after step 2: it would "
                                  "never happen"));
  }
}

TEST_CASE("a hung rank's restart names the hung rank with its operation and step, plait debug reports every start "
          "newest first, and a job that fails says its last step",
          "[drill]") {
  TempDir dir;
  const std::vector<std::string> ddp4 = {"--set", "parallel.dp=4", "--set", "distributed.collective_timeout_s=3",
                                         "--set", "checkpoint.every=2"};
  SECTION("restarted") {
    const fs::path out = dir / "restarted";
    std::vector<std::string> more = ddp4;
    for (const char* s : {"--max-restarts", "1", "--set", "debug.faults=[\"hang rank=2 step=3\"]"}) more.push_back(s);
    const ProcessResult r = run_plait(quickstart(out, "5", more));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const auto rec = json_of(out / "restarts.json").at(0);
    CHECK(rec.at("rank") == 2);
    CHECK(rec.at("culprit").at("rank") == 2);
    CHECK(rec.at("culprit").at("step") == 3);
    CHECK_THAT(rec.at("culprit").at("operation").get<std::string>(), Contains(" on group dp.0 (") && Contains("step 3"));
    CHECK(rec.at("reported_by_rank").get<int>() != 2);
    CHECK(rec.at("step_reached") == 2);
    CHECK(rec.at("fault") == "hang rank=2 step=3");
    const ProcessResult debug = run_plait({"debug", out.string()});
    INFO(debug.output);
    CHECK(debug.exit_code == 0);
    const auto latest = debug.output.find("attempt 1 (restart 1, finished at step 5)");
    const auto first = debug.output.find("attempt 0 (the first start, ended at step 2: ");
    REQUIRE(latest != std::string::npos);
    REQUIRE(first != std::string::npos);
    CHECK(latest < first);
    CHECK_THAT(debug.output.substr(first), Contains("culprit rank 2") && Contains("rank 2 never entered "));
  }
  SECTION("failed: the status says the last step that ended, not one written a second before") {
    const fs::path out = dir / "failed";
    std::vector<std::string> more = ddp4;
    for (const char* s : {"--set", "debug.faults=[\"hang rank=1 step=7\"]"}) more.push_back(s);
    const ProcessResult r = run_plait(quickstart(out, "9", more));
    INFO(r.output);
    CHECK(r.exit_code == 1);
    const auto status = json_of(out / "status.json");
    CHECK(status.at("state") == "failed");
    CHECK(status.at("step") == 6);
  }
}
