// plait sweep: its --vary flags and their product, repeats interleaved, and real sweeps
// of the quickstart model: refused combinations skipped with their sentence, the rest
// run and ranked; Ctrl-C stops after the running one with a report of what finished.
#include <catch2/catch.hpp>

#include <csignal>
#include <cstring>

#include <chrono>
#include <future>
#include <thread>

#include <nlohmann/json.hpp>

#include "config/resolve.hpp"
#include "plait/sdk/error.hpp"
#include "support/test_support.hpp"
#include "sweep/sweep_plan.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

TEST_CASE("the --vary flag splits on top-level commas and refuses what is not KEY=V1,V2", "[sweep]") {
  const sweep::Variation v = sweep::parse_vary("parallel.stage_blocks=[1,3],[2,2]");
  CHECK(v.key == "parallel.stage_blocks");
  CHECK(v.values == std::vector<std::string>{"[1,3]", "[2,2]"});
  CHECK(sweep::parse_vary("data.path=\"a,b.bin\",c.bin").values == std::vector<std::string>{"\"a,b.bin\"", "c.bin"});
  CHECK_THROWS_WITH(sweep::parse_vary("parallel.data"), "--vary parallel.data: expected KEY=V1,V2,...");
  CHECK_THROWS_WITH(sweep::parse_vary("stage=1,2"), "--vary stage=1,2: 'stage' is not a table.key");
  CHECK_THROWS_WITH(sweep::parse_vary("zero.stage=1,,3"), "--vary zero.stage=1,,3: an empty value");
}

TEST_CASE("each --vary value is checked against its key's schema, and none may be given twice", "[sweep]") {
  const sweep::SchemaOf core = [](const std::string& table) -> const TableSchema* {
    for (const auto& schema : core_schemas()) {
      if (schema.table == table) return &schema;
    }
    return nullptr;
  };
  auto check = [&](const std::string& flag) { sweep::check_variation(sweep::parse_vary(flag), core); };
  CHECK_NOTHROW(check("train.lr=1e-3,3e-3,0.01"));
  CHECK_NOTHROW(check("model.family=gpt2,llama"));
  CHECK_NOTHROW(check("train.lr=1,2.5"));  // an integer is a number too
  CHECK_THROWS_WITH(check("train.lr=0.1,0.1"), StartsWith("--vary train.lr: 0.1 is given twice"));
  CHECK_THROWS_WITH(check("train.lr=1e-3,0.001"), StartsWith("--vary train.lr: 1e-3 and 0.001 are the same value"));
  CHECK_THROWS_WITH(check("train.lr=2,2.0"), StartsWith("--vary train.lr: 2 and 2.0 are the same value"));
  CHECK_THROWS_WITH(check("model.size=tiny,\"tiny\""), StartsWith("--vary model.size: tiny and \"tiny\" are the same value"));
  CHECK_THROWS_WITH(check("train.steps=10,ten"),
                    StartsWith("--vary train.steps=ten: [train].steps: expected an integer, got string \"ten\""));
  CHECK_THROWS_WITH(check("train.dtype=float32,float16"), StartsWith("--vary train.dtype=float16: [train].dtype: "));
  CHECK_THROWS_WITH(check("train.steps=10,0"), StartsWith("--vary train.steps=0: [train].steps: 0 is below the minimum 1"));
  CHECK_THROWS_WITH(check("train.freeze=[\"a\"],\"a\""), StartsWith("--vary train.freeze=\"a\": [train].freeze: expected an array"));
  CHECK_THROWS_WITH(check("train.stesp=1,2"), StartsWith("--vary train.stesp=1: unknown key 'stesp' in [train] (did you mean 'steps'?)"));
  CHECK_THROWS_WITH(check("trian.steps=1,2"), StartsWith("--vary trian.steps: no table [trian]"));
}

TEST_CASE("a sweep is the product of its variations, repeats interleaved", "[sweep]") {
  const auto all = sweep::combinations({sweep::parse_vary("parallel.data=ddp,zero"), sweep::parse_vary("zero.stage=1,3")});
  REQUIRE(all.size() == 4);
  CHECK(all[0].name == "data-ddp_stage-1");
  CHECK(all[3].name == "data-zero_stage-3");
  CHECK(all[3].sets == std::vector<std::string>{"parallel.data=zero", "zero.stage=3"});
  const auto order = sweep::run_order(all, 2);
  REQUIRE(order.size() == 8);
  CHECK(order[0].folder == "data-ddp_stage-1.r1");
  CHECK(order[3].folder == "data-zero_stage-3.r1");
  // The second round starts halfway down the list: no combination is always first.
  CHECK(order[4].folder == "data-zero_stage-1.r2");
  CHECK(order[6].folder == "data-ddp_stage-1.r2");
  CHECK(order[7].folder == "data-ddp_stage-3.r2");
  CHECK_THROWS_WITH(sweep::combinations({sweep::parse_vary("zero.stage=1"), sweep::parse_vary("zero.stage=2")}),
                    "--vary zero.stage is given twice");
}

TEST_CASE("plait sweep skips what is refused with its sentence, runs the rest, repeats interleaved, and ranks them",
          "[sweep]") {
  TempDir dir;
  const fs::path out = dir / "sweep";
  const ProcessResult r =
      run_plait({"sweep", source_path("configs/quickstart.toml"), "--vary", "parallel.data=ddp,zero", "--vary",
                 "zero.stage=2", "--vary", "model.n_head=4,3", "--repeats", "2", "--steps", "3", "--out", out.string()});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("skipped data-ddp_stage-2_n_head-3: ") && Contains("skipped data-zero_stage-2_n_head-3: "));
  CHECK_THAT(r.output, Contains("note: data-ddp_stage-2_n_head-4: zero.stage does nothing here: [zero] is plugin "
                                "zero's table, and this run does not use zero"));
  CHECK_THAT(r.output, Contains("sweep: 4 combinations, 2 valid, 4 runs into " + out.string()));
  CHECK_THAT(r.output, Contains("[1/4] data-ddp_stage-2_n_head-4.r1 ... finished in "));
  CHECK_THAT(r.output, Contains("[2/4] data-zero_stage-2_n_head-4.r1 ... finished in "));
  CHECK_THAT(r.output, Contains("[3/4] data-zero_stage-2_n_head-4.r2 ... finished in "));
  CHECK_THAT(r.output, Contains("[4/4] data-ddp_stage-2_n_head-4.r2 ... finished in "));
  const auto sweep_json = nlohmann::json::parse(read_file(out / "sweep.json"));
  REQUIRE(sweep_json.at("combinations").size() == 4);
  const std::string reason = sweep_json.at("combinations")[1].at("refused").get<std::string>();
  CHECK_THAT(reason, Contains("model.n_head=3") && Contains("n_embd"));
  CHECK(sweep_json.at("combinations")[0].at("refused").is_null());
  CHECK(sweep_json.at("runs").size() == 4);
  CHECK(sweep_json.at("runs")[3].at("state") == "finished");
  const std::string md = read_file(out / "report.md");
  CHECK_THAT(md, Contains("## Skipped before launch\n\ndata-ddp_stage-2_n_head-3: " + reason));
  CHECK(fs::exists(out / "report.html"));
  // The repeats of a combination are one run of the report, their steps after warm-up pooled
  // (2 of 3 each), and their losses agree; the two strategies are equivalent and ranked.
  CHECK_THAT(md, Contains("| data-ddp_stage-2_n_head-4 | ") && !Contains("n_head-4.r1 |"));
  CHECK_THAT(md, Contains("Equivalent: every loss agrees"));
  CHECK_THAT(md, !Contains("not deterministic"));
  CHECK_THAT(md, Contains("## Ranking\n\nBy median tokens/s"));
  const std::string speed = md.substr(md.find("## Speed"), md.find("## Ranking") - md.find("## Speed"));
  CHECK_THAT(speed, Contains("| 4 |"));
}

TEST_CASE("a sweep whose every combination is refused exits 1 and leaves no sweep folder", "[sweep]") {
  TempDir dir;
  const fs::path out = dir / "sweep";
  const ProcessResult r = run_plait({"sweep", source_path("configs/quickstart.toml"), "--vary", "model.n_head=3,5",
                                     "--steps", "2", "--out", out.string()});
  INFO(r.output);
  CHECK(r.exit_code == 1);
  // The refused value is named by the --vary that gave it.
  CHECK_THAT(r.output, Contains("skipped n_head-3: --vary model.n_head=3,5, as model.n_head=3: ") &&
                           Contains("error: every one of the sweep's 2 combinations was refused before launch"));
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("Ctrl-C or SIGTERM stops a sweep and its running run with that signal and the report covers the runs that "
          "finished",
          "[sweep]") {
  const int sig = GENERATE(SIGINT, SIGTERM);
  TempDir dir;
  const fs::path out = dir / "sweep";
  auto job = std::async(std::launch::async, [&] {
    return run_plait({"sweep", source_path("configs/quickstart.toml"), "--vary", "train.steps=3,4,100000", "--out",
                      out.string()});
  });
  const fs::path long_run = out / "steps-100000" / "metrics.jsonl";
  for (int i = 0; i < 1200 && !fs::exists(long_run); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE(fs::exists(long_run));
  // "[/]" spares pkill's own shell; "$": the sweep, whose --out is last, not its run's.
  REQUIRE(std::system(concat("pkill -", sig, " -f -- '--out [/]", out.string().substr(1), "$'").c_str()) == 0);
  REQUIRE(job.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  const ProcessResult r = job.get();
  INFO(r.output);
  CHECK(r.exit_code == 128 + sig);
  CHECK_THAT(r.output, Contains("[3/3] steps-100000 ... interrupted in "));
  CHECK_THAT(r.output, Contains("sweep interrupted: the report covers the 2 runs that finished"));
  CHECK_THAT(r.output, Contains("1 setting differ; "));
  // The run under way got the same signal, and stopped as asked.
  const auto status = nlohmann::json::parse(read_file(out / "steps-100000" / "status.json"));
  CHECK(status.at("state") == "stopped");
  CHECK_THAT(status.at("reason").get<std::string>(), Contains(concat("stopped as asked (signal ", sig, ", ", strsignal(sig), ")")));
  const auto sweep_json = nlohmann::json::parse(read_file(out / "sweep.json"));
  REQUIRE(sweep_json.at("runs").size() == 3);
  CHECK(sweep_json.at("runs")[2].at("state") == "interrupted");
  CHECK_THAT(read_file(out / "report.md"), Contains("| train.steps | 3 ("));
}

// plait check runs its candidate and reference as child runs: a stop passes to the one under way.
TEST_CASE("SIGTERM to plait check stops its candidate run too, which says so, and check exits 143", "[sweep]") {
  TempDir dir;
  const fs::path out = dir / "check";
  auto job = std::async(std::launch::async, [&] {
    return run_plait({"check", source_path("configs/quickstart.toml"), "--steps", "100000", "--out", out.string()});
  });
  const fs::path candidate = out / "candidate" / "metrics.jsonl";
  for (int i = 0; i < 1200 && !fs::exists(candidate); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE(fs::exists(candidate));
  REQUIRE(std::system(concat("pkill -TERM -f -- '^[^ ]*plait check .*--out [/]", out.string().substr(1), "$'").c_str()) == 0);
  REQUIRE(job.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  const ProcessResult r = job.get();
  INFO(r.output);
  CHECK(r.exit_code == 128 + SIGTERM);
  CHECK_THAT(r.output, Contains("plait check stopped as asked (signal 15, Terminated): its candidate run in ") &&
                           Contains("was stopped too"));
  CHECK(nlohmann::json::parse(read_file(out / "candidate" / "status.json")).at("state") == "stopped");
  CHECK_FALSE(fs::exists(out / "reference"));
}
