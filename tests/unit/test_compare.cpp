// plait compare: quartiles and the noise rule on made-up runs, then real runs: two
// equivalent strategies (ddp and zero 3) said to be equivalent with their speed ratio,
// and two learning rates said to diverge, at the step they do, naming the key.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "compare/comparison.hpp"
#include "compare/run_record.hpp"
#include "compare/report_sections.hpp"
#include "plait/sdk/error.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;

namespace {

// A run of `step_ms` per step (losses 5, 4, 3, ... times `loss_scale`).
compare::RunRecord made_up(const std::string& name, const std::vector<double>& step_ms, double loss_scale = 1.0) {
  compare::RunRecord r;
  r.dir = "/runs/" + name;
  r.name = name;
  r.settings["train.dtype"] = {"\"float64\"", "default"};
  r.settings["train.lr"] = {"0.001", "run.toml:3:1"};
  for (std::size_t i = 0; i < step_ms.size(); ++i) {
    r.metrics.push_back({{"step", i + 1},
                         {"loss", (5.0 - static_cast<double>(i)) * loss_scale},
                         {"step_ms", step_ms[i]},
                         {"tokens_per_s", 1000.0 / step_ms[i]},
                         {"mfu", 0.01},
                         {"ranks", {{{"rank", 0}, {"step_ms", step_ms[i]}, {"time.forward_ms", step_ms[i] / 2},
                                     {"time.other_ms", step_ms[i] / 2}}}}});
  }
  return r;
}

std::string report_of(const std::vector<std::string>& dirs) {
  const ProcessResult r = run_plait([&] {
    std::vector<std::string> args{"compare"};
    args.insert(args.end(), dirs.begin(), dirs.end());
    return args;
  }());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return r.output;
}

}  // namespace

TEST_CASE("quartiles interpolate between the sorted values", "[compare]") {
  const compare::Spread s = compare::spread_of({4, 1, 3, 2, 5});
  CHECK(s.median == 3.0);
  CHECK(s.q1 == 2.0);
  CHECK(s.q3 == 4.0);
  const compare::Spread even = compare::spread_of({10, 20, 30, 40});
  CHECK(even.median == 25.0);
  CHECK(even.q1 == 17.5);
  CHECK(even.q3 == 32.5);
}

TEST_CASE("a speed difference inside the step times' spread is called noise, outside it faster", "[compare]") {
  const std::vector<double> base = {50, 10, 11, 12, 10, 11, 12, 10, 11, 12};
  auto noisy = compare::compare_runs({made_up("a", base), made_up("b", {50, 10.5, 11.5, 12, 10, 11, 11.5, 10, 11, 12})});
  CHECK(noisy.warmup_steps == 1);  // the first record (50 ms) is left out
  CHECK(noisy.figures[1].speed.verdict == "within noise");
  const std::string text = compare::render_terminal(compare::report_sections(noisy));
  CHECK_THAT(text, Contains("it is not a measured difference"));
  auto faster = compare::compare_runs({made_up("a", base), made_up("b", {50, 5, 5.5, 6, 5, 5.5, 6, 5, 5.5, 6})});
  CHECK(faster.figures[1].speed.verdict == "faster");
  CHECK(faster.figures[1].speed.ratio == Approx(2.0).epsilon(0.05));
  CHECK_THROWS_WITH(compare::compare_runs({made_up("a", base)}), Contains("compare needs two or more runs; got 1"));
}

TEST_CASE("a speed difference from fewer than 5 steps each is not called faster or slower", "[compare]") {
  // One measured step each (the first is warm-up): no spread, so any gap looked real.
  auto c = compare::compare_runs({made_up("a", {50, 10}), made_up("b", {50, 5})});
  CHECK(c.figures[1].speed.verdict == compare::kTooFewSteps);
  const std::string text = compare::render_terminal(compare::report_sections(c));
  CHECK_THAT(text, Contains("1 step(s) measured after warm-up, and 5 are needed to call either faster"));
  // Five measured steps each: judged.
  auto enough = compare::compare_runs({made_up("a", {50, 10, 10, 10, 10, 10}), made_up("b", {50, 5, 5, 5, 5, 5})});
  CHECK(enough.figures[1].speed.verdict == "faster");
}

TEST_CASE("with repeats run side by side, a steady ratio beats the machine's drift, an unsteady one does not",
          "[compare]") {
  // Three repeats each; the machine slows from one repeat to the next.
  auto with_repeats = [](const std::string& name, const std::vector<double>& per_repeat) {
    compare::RunRecord r = made_up(name, std::vector<double>(6, per_repeat[0]));
    for (std::size_t k = 1; k < per_repeat.size(); ++k) r.repeats.push_back(made_up(name, std::vector<double>(6, per_repeat[k])).metrics);
    return r;
  };
  const auto c = compare::compare_runs({with_repeats("a", {10, 12, 14}), with_repeats("b", {11, 13.3, 15.3}),
                                        with_repeats("c", {10.5, 11.0, 15.0})});
  CHECK(c.figures[0].speed.repeat_step_ms == std::vector<double>{10, 12, 14});
  CHECK(c.figures[1].speed.verdict == "slower");        // 10% slower in every repeat
  CHECK(c.figures[2].speed.verdict == "within noise");  // faster, slower, faster
  CHECK(c.figures[1].speed.steps_used == 3 * 5);
  const std::string text = compare::render_terminal(compare::report_sections(c));
  CHECK_THAT(text, Contains("only by a paired t-test at 95% over the 3 repeats' median step times"));
  // The same pooled steps with one run each: the notches, which cannot see the drift.
  CHECK(compare::speed_rule(compare::RunSpeed{}, compare::RunSpeed{}).rfind("the notches", 0) == 0);
}

TEST_CASE("losses that part say at which step, by how much, and which settings differ", "[compare]") {
  compare::RunRecord b = made_up("b", {10, 10, 10}, 1.0);
  b.metrics[2]["loss"] = 3.0 * (1 + 1e-6);
  b.settings["train.lr"] = {"0.002", "--set train.lr=0.002"};
  const auto c = compare::compare_runs({made_up("a", {10, 10, 10}), b});
  CHECK(c.loss.first_divergent == 3);
  CHECK(compare::loss_verdict(c) ==
        "Not equivalent: the losses diverge at step 3 (relative difference 1.00e-06 > 1.00e-10, float64 (plait check's "
        "default)); largest 1.00e-06 over 3 common steps. What differs: train.lr.");
  REQUIRE(c.differences.size() == 1);
  CHECK(c.differences[0].per_run[1].origin == "--set train.lr=0.002");
}

TEST_CASE("a bundle whose content changed between runs is named, and a failed run is noted", "[compare]") {
  compare::RunRecord a = made_up("a", {10, 10, 10});
  compare::RunRecord b = made_up("b", {10, 10, 10});
  a.bundles = {{"/teams/bundles/llama-3d.toml", "00000000000000aa"}, {"/x/bf16-mixed.toml", "1111111111111111"}};
  b.bundles = {{"/teams/bundles/llama-3d.toml", "00000000000000bb"}, {"/x/bf16-mixed.toml", "1111111111111111"}};
  b.state = "failed";
  b.reason = "step 3: the loss is nan";
  const auto c = compare::compare_runs({a, b});
  REQUIRE(c.bundle_changes.size() == 1);
  CHECK(c.bundle_changes[0] ==
        "bundle llama-3d changed between the runs: a read xxh3 00000000000000aa, b read xxh3 00000000000000bb");
  const std::string text = compare::render_terminal(compare::report_sections(c));
  CHECK_THAT(text, Contains("bundle llama-3d changed between the runs: a read xxh3 00000000000000aa, b read xxh3 "
                            "00000000000000bb."));
  CHECK_THAT(text, Contains("Note: b did not finish (failed: step 3: the loss is nan)."));
}

TEST_CASE("a sweep folder's runs come in its sweep.json's order (its first combination the baseline) and other folders by name",
          "[compare]") {
  TempDir dir;
  for (const char* run : {"b", "a.r1", "a.r2", "c"}) write_file(dir / run / "config.lock.toml", "");
  write_file(dir / "notes" / "readme.txt", "not a run");
  auto names = [&] {
    std::string out;
    for (const auto& d : compare::expand_run_folders({dir.path().string()})) out += fs::path(d).filename().string() + " ";
    return out;
  };
  CHECK(names() == "a.r1 a.r2 b c ");
  write_file(dir / "sweep.json", R"({"combinations": [{"name": "c"}, {"name": "a"}, {"name": "b"}]})");
  CHECK(names() == "c a.r1 a.r2 b ");
}

TEST_CASE("compare: ddp and zero 3 are equivalent with a speed ratio, and two learning rates diverge at step 2",
          "[compare]") {
  TempDir dir;
  const std::vector<std::string> common = {"train.warmup_steps=0"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), common.begin(), common.end());
    return extra;
  };
  REQUIRE(run_quickstart(dir / "ddp", 8, with({})).exit_code == 0);
  REQUIRE(run_quickstart(dir / "zero3", 8, with({"parallel.data=zero", "zero.stage=3"})).exit_code == 0);
  REQUIRE(run_quickstart(dir / "lr", 8, with({"train.lr=1e-3"})).exit_code == 0);

  const std::string same = report_of({(dir / "ddp").string(), (dir / "zero3").string()});
  CHECK_THAT(same, Contains("Equivalent: every loss agrees within 1.00e-05 (float32 (plait check's default)) over 8 "
                            "common steps"));
  CHECK_THAT(same, Contains("parallel.data  \"ddp\" (" + source_path("configs/quickstart.toml") + ":21:1)") ||
                       Contains("parallel.data  \"ddp\" (configs/quickstart.toml:21:1)"));
  CHECK_THAT(same, Contains("\"zero\" (--set parallel.data=zero)"));
  CHECK_THAT(same, Contains("zero.stage"));
  CHECK_THAT(same, Contains("(baseline)"));
  CHECK_THAT(same, Contains("Where the time goes") && Contains("comm_exposed"));

  const ProcessResult md =
      run_plait({"compare", (dir / "ddp").string(), (dir / "lr").string(), "--markdown", (dir / "r.md").string()});
  INFO(md.output);
  REQUIRE(md.exit_code == 0);
  CHECK_THAT(md.output, Contains("Not equivalent: the losses diverge at step 2 (relative difference"));
  CHECK_THAT(md.output, Contains("What differs: train.lr."));
  const std::string markdown = read_file(dir / "r.md");
  CHECK_THAT(markdown, Contains("## Loss agreement\n\nNot equivalent: the losses diverge at step 2"));
  CHECK_THAT(markdown, Contains("| train.lr | 0.003 ("));
  CHECK_THAT(markdown, Contains(" | 0.001 (--set train.lr=1e-3) |"));
  // A rerun replaces its own earlier report.
  const ProcessResult again =
      run_plait({"compare", (dir / "lr").string(), (dir / "ddp").string(), "--markdown", (dir / "r.md").string()});
  INFO(again.output);
  CHECK(again.exit_code == 0);
  CHECK(read_file(dir / "r.md") != markdown);

  const ProcessResult one = run_plait({"compare", (dir / "ddp").string()});
  CHECK(one.exit_code != 0);
  CHECK_THAT(one.output, Contains("error: compare needs two or more runs; got 1"));
  const ProcessResult missing = run_plait({"compare", (dir / "ddp").string(), (dir / "nowhere").string()});
  CHECK_THAT(missing.output, Contains((dir / "nowhere").string() + ": no such run folder"));
}
