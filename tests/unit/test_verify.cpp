// plait verify: a built-in plugin passes with every row it owes; a plugin given by path
// is verified from its folder; each broken fixture fails on its own line, with the
// command that reproduces it; the report says the same as the table.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>

#include "support/test_support.hpp"

using namespace plait::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

std::string fixture(const std::string& folder, const std::string& name) {
  return std::string(PLAIT_FIXTURE_DIR) + "/" + folder + "/libplait_plugin_fixture_" + name + ".so";
}

ProcessResult verify(const TempDir& dir, const std::string& plugin, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"verify", plugin, "--quick", "--out", (dir / "verify").string(), "--json",
                                   (dir / "report.json").string()};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_plait(args);
}

// The report's row of a title, which must exist.
nlohmann::json row(const nlohmann::json& report, const std::string& title_start) {
  for (const auto& r : report.at("checks")) {
    if (r.at("title").get<std::string>().rfind(title_start, 0) == 0) return r;
  }
  FAIL("no row '" << title_start << "' in the report");
  return {};
}

// The report of `plait verify --quick` on a broken fixture, which must fail.
nlohmann::json failed_report(const TempDir& dir, const std::string& folder) {
  const ProcessResult r = verify(dir, fixture(folder, folder));
  INFO(r.output);
  CHECK(r.exit_code == 1);
  return nlohmann::json::parse(read_file(dir / "report.json"));
}

// The detail of a row that must have failed.
std::string failed_detail(const nlohmann::json& report, const std::string& title_start) {
  const auto r = row(report, title_start);
  CHECK(r.at("status") == "fail");
  return r.at("detail").get<std::string>();
}

}  // namespace

TEST_CASE("plait verify --quick passes ddp: library, schema, equivalence, exact resume, a refusal per missing capability, "
          "random combinations", "[verify]") {
  TempDir dir;
  const ProcessResult r = verify(dir, "ddp", {"--combos", "3", "--seed", "7"});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("PASS  library      loads: entry point, API version, LibTorch, C++ ABI") &&
                           Contains("PASS  equivalence  dp 2, gpt2, float64, accumulation 2, clipping") &&
                           Contains("PASS  checkpoint   resumes exactly") && Contains("PASS: ") &&
                           Contains("PASS  honesty      one device-to-host read per step") &&
                           Contains("PASS  honesty      the state bytes it reports") &&
                           Contains("PASS  honesty      its traffic is what the core counted"));
  const auto report = nlohmann::json::parse(read_file(dir / "report.json"));
  CHECK_THAT(row(report, "its traffic is what the core counted").at("detail").get<std::string>(),
             Contains("all but 0 B inside the core's counted operations"));
  CHECK(report.at("passed").get<bool>());
  CHECK(report.at("plugin").at("kind") == "data");
  // Every parameter compared: 4 + 12 per block in gpt2, 3 + 9 in llama, 4 blocks.
  CHECK_THAT(row(report, "dp 2, gpt2, float64").at("detail").get<std::string>(), Contains("gradients 52, worst"));
  CHECK_THAT(row(report, "dp 2, llama, float32, dropout").at("detail").get<std::string>(), Contains("gradients 39, worst"));
  CHECK(row(report, "schema").at("detail").get<std::string>() == "3 keys");  // ddp's bucket_cap_mb, overlap, broadcast_init
  CHECK_THAT(row(report, "3 random combinations (seed 7)").at("detail").get<std::string>(),
             Contains("3 equal the single process, 0 do not"));
  // The report on disk is the one --json wrote.
  CHECK(read_file(dir / "verify/verify.json") == read_file(dir / "report.json"));
}

TEST_CASE("plait verify of a library path: a minimal in-house ddp passes, and one that never syncs fails its equivalence rows",
          "[verify]") {
  TempDir dir;
  const ProcessResult good = verify(dir, fixture("minimal_ddp", "minimal_ddp"));
  INFO(good.output);
  CHECK(good.exit_code == 0);
  CHECK_THAT(good.output, Contains("PASS  checkpoint   resumes exactly"));

  TempDir bad;
  const ProcessResult r = verify(bad, fixture("nosync", "nosync"));
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("FAIL  equivalence  dp 2, gpt2, float64, accumulation 2, clipping") &&
                           Contains("reproduce: plait check ") && Contains("--set parallel.data=fixture-nosync --set parallel.dp=2") &&
                           Contains("FAIL: "));
  // Without 'checkpoint', a run that saves is refused before launch: that row passes.
  CHECK_THAT(r.output, Contains("PASS  capabilities without 'checkpoint': refused before launch"));
}

TEST_CASE("plait verify fails a data plugin that averages gradients instead of summing them, and shrinks a failing "
          "random combination to the override that matters", "[verify]") {
  TempDir dir;
  const ProcessResult r = verify(dir, fixture("average", "average"), {"--combos", "2", "--seed", "1"});
  INFO(r.output);
  CHECK(r.exit_code == 1);
  const auto report = nlohmann::json::parse(read_file(dir / "report.json"));
  const auto failed = row(report, "dp 2, gpt2, float64");
  CHECK(failed.at("status") == "fail");
  CHECK_THAT(failed.at("detail").get<std::string>(), Contains("mismatch: "));
  // Seed 1's second combination runs on dp 2 among 8 overrides; only dp 2 is needed to fail.
  const auto shrunk = row(report, "combination 2, shrunk from 8 overrides to 2: parallel.dp=2");
  CHECK(shrunk.at("status") == "fail");
  CHECK_THAT(shrunk.at("reproduce").get<std::string>(),
             Contains("base.toml --set parallel.data=fixture-average --set parallel.dp=2") &&
                 !Contains("model.family"));
  CHECK_THAT(row(report, "2 random combinations (seed 1)").at("detail").get<std::string>(),
             Contains("1 equal the single process, 1 do not"));
}

TEST_CASE("plait verify fails a plugin that claims checkpoints and restores them wrongly, on the resume row", "[verify]") {
  TempDir dir;
  const auto report = failed_report(dir, "bad_restore");
  CHECK(row(report, "dp 2, gpt2, float64").at("status") == "pass");  // it trains right
  CHECK_THAT(failed_detail(report, "resumes exactly"), Contains("the resumed losses differ: step 3 "));
}

TEST_CASE("plait verify fails a plugin that leaves its optimizer state out of its state bytes, on the allocator row",
          "[verify]") {
  TempDir dir;
  const auto report = failed_report(dir, "no_optimizer_bytes");
  CHECK(row(report, "dp 2, gpt2, float64").at("status") == "pass");
  CHECK(row(report, "one device-to-host read per step").at("status") == "pass");
  // 1.7 MiB of float64 parameters and twice that of AdamW moments; the gradients are freed.
  CHECK(failed_detail(report, "the state bytes it reports") ==
        "step 1, rank 0: its allocator holds 5.0 MiB on its device between steps, but it reports parameters 1.7 MiB, "
        "gradients 1.7 MiB, optimizer 0 B (more is held than reported); so in every step recorded");
}

TEST_CASE("plait verify fails a plugin that reads a figure of each parameter to the host, on the one-read row", "[verify]") {
  TempDir dir;
  const auto report = failed_report(dir, "read_per_parameter");
  CHECK(row(report, "the state bytes it reports").at("status") == "pass");
  CHECK_THAT(failed_detail(report, "one device-to-host read per step"),
             StartsWith("rank 0 waited for the device 52 times in step 1 outside the core's one read"));  // 52 parameters
  CHECK_THAT(row(report, "one device-to-host read per step").at("reproduce").get<std::string>(),
             Contains("--set debug.count_host_syncs=true"));
}

TEST_CASE("plait verify fails a plugin that sends its gradients over a connection of its own, on the traffic row",
          "[verify]") {
  TempDir dir;
  const auto report = failed_report(dir, "side_channel");
  CHECK(row(report, "dp 2, gpt2, float64").at("status") == "pass");
  // The whole float64 gradient, 1.7 MiB, besides the all-reduce's own 1.7 MiB.
  CHECK_THAT(failed_detail(report, "its traffic is what the core counted"),
             StartsWith("step 1, rank 0: 1.7 MiB of the 3.4 MiB it sent over TCP went while none of the core's "
                        "operations was in flight"));
}

TEST_CASE("an approximate plugin is held to ddp's loss, not the single process's: one that learns a hundred times slower "
          "fails its approximation rows with both losses, and plait check refuses it", "[verify]") {
  TempDir dir;
  const auto report = failed_report(dir, "approximate_slow");
  // Its rows compare it with ddp, on its own mesh, and say by how much it misses.
  const std::string detail = failed_detail(report, "dp 2, gpt2, float64, accumulation 2, clipping, 100 steps against ddp");
  CHECK_THAT(detail, StartsWith("final loss ") && Contains(" against ddp's ") && Contains("at most +5.0% passes") &&
                         Contains("a step against ddp's"));
  CHECK_THAT(row(report, "dp 2, gpt2, float64").at("reproduce").get<std::string>(),
             Contains("--set parallel.data=fixture-approximate-slow") && Contains("--set parallel.data=ddp"));
  for (const auto& r : report.at("checks")) CHECK(r.at("group") != "equivalence");

  TempDir checked;
  const ProcessResult refused = run_plait({"check", source_path("configs/quickstart.toml"), "--out", (checked / "c").string(),
                                           "--set", "parallel.data=fixture-approximate-slow"},
                                          {{"PLAIT_PLUGIN_PATH", std::string(PLAIT_FIXTURE_DIR) + "/approximate_slow"}});
  INFO(refused.output);
  CHECK(refused.exit_code != 0);
  CHECK_THAT(refused.output, Contains("--set parallel.data=fixture-approximate-slow: data plugin 'fixture-approximate-slow' "
                                      "is approximate") && Contains("plait verify fixture-approximate-slow"));
  CHECK_FALSE(std::filesystem::exists(checked / "c"));
}

TEST_CASE("plait verify fails a schema key without a doc, naming the key", "[verify]") {
  TempDir dir;
  const ProcessResult r = verify(dir, fixture("undocumented", "undocumented"));
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("FAIL  library      schema: every key typed, documented, with a default") &&
                           Contains("forgotten") && Contains("doc (one line) is required"));
}

TEST_CASE("plait verify of a name it does not know suggests one, and leaves no folder", "[verify]") {
  TempDir dir;
  const ProcessResult r = run_plait({"verify", "dpp", "--quick", "--out", (dir / "verify").string()});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("error: plait verify: no plugin named 'dpp' (did you mean 'ddp'?)"));
  CHECK_FALSE(fs::exists(dir / "verify"));
}

namespace {

// `bytes` of `file` from `at` replaced (an ELF header's class or machine).
void patch(const fs::path& file, std::size_t at, const std::string& bytes) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(at));
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A shared library built from C `source` here, or false when no C compiler is at hand.
bool compile_library(const fs::path& out, const std::string& source, const std::string& flags = "") {
  const fs::path c = out.string() + ".c";
  write_file(c, source);
  return std::system(("cc -shared -fPIC -o '" + out.string() + "' '" + c.string() + "' " + flags + " 2>/dev/null").c_str()) == 0;
}

}  // namespace

TEST_CASE("a file that is not a plugin library is said to be what it is, in plait's words, naming the file",
          "[verify]") {
  TempDir dir;
  const fs::path libs = dir / "libs";
  auto lib = [&](const std::string& name) { return libs / ("libplait_plugin_" + name + ".so"); };
  write_file(lib("text"), "this is text, not a shared library");
  fs::copy_file(PLAIT_BIN, lib("program"));
  fs::copy_file(fixture("good", "good"), lib("arm"));
#if defined(__x86_64__)
  patch(lib("arm"), 18, std::string("\xb7\x00", 2));  // e_machine 183: AArch64
  const std::string other = "AArch64, 64-bit", here = "x86-64";
#else
  patch(lib("arm"), 18, std::string("\x3e\x00", 2));  // e_machine 62: x86-64
  const std::string other = "x86-64, 64-bit", here = "AArch64";
#endif
  fs::copy_file(fixture("good", "good"), lib("thirty-two"));
  patch(lib("thirty-two"), 4, std::string("\x01", 1));  // ELFCLASS32
  std::vector<std::pair<std::string, std::string>> says = {
      {"text", "is not a shared library: it does not start with an ELF header; a plugin is a shared library built with "
               "plait_add_plugin()"},
      {"program", "is an executable, not a shared library"},
      {"arm", "was built for another machine (" + other + "), and this plait runs on " + here},
      {"thirty-two", "-bit), and this plait runs on " + here},
  };
  // What the dynamic loader itself refuses: a symbol no library here defines, a library that is gone.
  if (compile_library(lib("undefined"), "void plait_nowhere_to_be_found(void);\nvoid f(void) { plait_nowhere_to_be_found(); }\n") &&
      compile_library(dir / "libplait_gone.so", "int g(void) { return 1; }\n") &&
      compile_library(lib("orphan"), "int g(void);\nint h(void) { return g(); }\n",
                      "-L'" + dir.path().string() + "' -lplait_gone -Wl,--no-as-needed")) {
    fs::remove(dir / "libplait_gone.so");
    says.push_back({"undefined", "uses the symbol plait_nowhere_to_be_found, which neither this plait nor its libraries "
                                 "define: it was built against another plait or LibTorch"});
    says.push_back({"orphan", "needs the library libplait_gone.so, which the dynamic loader cannot find"});
  } else {
    WARN("no C compiler here: the loader's own refusals are not exercised");
  }
  const ProcessResult listed = run_plait({"plugins"}, {{"PLAIT_PLUGIN_PATH", libs.string()}});
  INFO(listed.output);
  CHECK(listed.exit_code == 1);
  for (const auto& [name, sentence] : says) {
    CHECK_THAT(listed.output, Contains("refused: plugin library " + lib(name).string() + " ") && Contains(sentence));
  }
  CHECK_THAT(listed.output, !Contains("dlerror") && !Contains("boost") && !Contains("shared_library::load") &&
                                !Contains("invalid ELF header") && !Contains("Bad file descriptor"));
  // plait verify of such a file: the library row fails with the same sentence.
  const ProcessResult r = run_plait({"verify", lib("text").string(), "--quick", "--out", (dir / "verify").string()});
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("FAIL  library      loads: entry point, API version, LibTorch, C++ ABI") &&
                           Contains("plugin library " + lib("text").string() + " is not a shared library") &&
                           !Contains("dlerror") && !Contains("boost"));
}
