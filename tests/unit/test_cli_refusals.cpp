// Every refusal of `plait run`: non-zero exit, the promised message, and no run folder.
#include <catch2/catch.hpp>

#include "plait/sdk/error.hpp"
#include "plait/sdk/version.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;

namespace {

struct Refusal {
  ProcessResult result;
  bool wrote_output;
};

Refusal refuse(const TempDir& dir, const std::string& config_text, const std::map<std::string, std::string>& env = {},
               std::vector<std::string> extra = {}) {
  const auto config = write_file(dir / "run.toml", config_text);
  const auto out = dir / "out";
  std::vector<std::string> args = {"run", config.string(), "--out", out.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  Refusal r{run_plait(args, env), fs::exists(out)};
  return r;
}

void check_refused(const Refusal& r) {
  INFO(r.result.output);
  CHECK(r.result.exit_code != 0);
  CHECK_FALSE(r.wrote_output);
  CHECK_THAT(r.result.output, Contains("error: "));
}

}  // namespace

TEST_CASE("refused: bad TOML", "[cli]") {
  TempDir dir;
  auto r = refuse(dir, "[train]\nsteps = 3\nlr = \n");
  check_refused(r);
  CHECK_THAT(r.result.output, Contains("run.toml:3:") && Contains("invalid TOML"));
}

TEST_CASE("refused: unknown key, with file:line:column and a suggestion", "[cli]") {
  TempDir dir;
  auto r = refuse(dir, "[train]\nsteps = 3\nlerning_rate = 0.1\n");
  check_refused(r);
  CHECK_THAT(r.result.output, Contains("run.toml:3:1: unknown key 'lerning_rate' in [train]"));
  auto r2 = refuse(dir, "[train]\nsetps = 3\n");
  check_refused(r2);
  CHECK_THAT(r2.result.output, Contains("did you mean 'steps'?"));
}

TEST_CASE("refused: wrong type", "[cli]") {
  TempDir dir;
  auto r = refuse(dir, "[train]\nsteps = \"many\"\n");
  check_refused(r);
  CHECK_THAT(r.result.output, Contains("run.toml:2:1: [train].steps: expected an integer, got string \"many\""));
  auto r2 = refuse(dir, "[train]\nsteps = 3\n", {}, {"--set", "train.lr=fast"});
  check_refused(r2);
  CHECK_THAT(r2.result.output, Contains("--set train.lr=fast: [train].lr: expected a number, got string"));
}

TEST_CASE("refused: missing extends file", "[cli]") {
  TempDir dir;
  auto r = refuse(dir, "extends = [\"bundles/missing.toml\"]\n");
  check_refused(r);
  CHECK_THAT(r.result.output, Contains("run.toml:1:12: extends names a file that does not exist") &&
                                  Contains("bundles/missing.toml"));
}

TEST_CASE("refused: extends cycle", "[cli]") {
  TempDir dir;
  write_file(dir / "loop.toml", "extends = [\"run.toml\"]\n");
  auto r = refuse(dir, "extends = [\"loop.toml\"]\n");
  check_refused(r);
  CHECK_THAT(r.result.output, Contains("extends cycle") && Contains("run.toml -> ") && Contains("loop.toml -> "));
}

TEST_CASE("refused: unknown plugin, listing the plugins found", "[cli]") {
  TempDir dir;
  auto r = refuse(dir, "[parallel]\ndata = \"dpp\"\n");
  check_refused(r);
  CHECK_THAT(r.result.output, Contains("run.toml:2:1: [parallel].data: unknown data plugin 'dpp'") &&
                                  Contains("(did you mean 'ddp'?)") && Contains("data plugins found: ddp, fsdp, single, zero") &&
                                  Contains("plugins are searched in"));
}

TEST_CASE("refused: a plugin library of another API major version", "[cli]") {
  TempDir dir;
  auto r = refuse(dir, "[train]\nsteps = 1\n", {{"PLAIT_PLUGIN_PATH", std::string(PLAIT_FIXTURE_DIR) + "/next_major"}});
  check_refused(r);
  CHECK_THAT(r.result.output, Contains("libplait_plugin_fixture_next_major.so") &&
                                  Contains(concat("was built for plugin API ", PLAIT_API_MAJOR + 1, ".", PLAIT_API_MINOR,
                                                  " but this plait has API ", PLAIT_API_VERSION_STRING,
                                                  ", another major version")));
}

TEST_CASE("refused: a plugin library without the entry point", "[cli]") {
  TempDir dir;
  auto r = refuse(dir, "[train]\nsteps = 1\n", {{"PLAIT_PLUGIN_PATH", std::string(PLAIT_FIXTURE_DIR) + "/no_entry"}});
  check_refused(r);
  CHECK_THAT(r.result.output, Contains("libplait_plugin_no_entry.so has no entry point plait_plugin_info()"));
}

TEST_CASE("refused: a run folder that already holds files", "[cli]") {
  TempDir dir;
  write_file(dir / "out/keep.txt", "earlier results");
  const auto config = write_file(dir / "run.toml", "[train]\nsteps = 1\n");
  ProcessResult r = run_plait({"run", config.string(), "--out", (dir / "out").string()});
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains("already exists and is not empty"));
  CHECK(read_file(dir / "out/keep.txt") == "earlier results");
  CHECK_FALSE(fs::exists(dir / "out/config.lock.toml"));
}

TEST_CASE("refused before launch: a run folder or a checkpoint folder where nothing can be written, even as root",
          "[cli]") {
  TempDir dir;
  const auto config = write_file(dir / "run.toml", "[train]\nsteps = 1\n");
  const ProcessResult out = run_plait({"run", config.string(), "--out", "/sys/plait-run"});
  CHECK(out.exit_code == 1);
  CHECK_THAT(out.output, Contains("cannot create the run folder /sys/plait-run: /sys is not writable ("));
  const ProcessResult ck =
      run_plait({"run", config.string(), "--out", (dir / "run").string(), "--set", "checkpoint.dir=\"/sys/plait-ck\""});
  CHECK(ck.exit_code == 1);
  CHECK_THAT(ck.output, Contains("[checkpoint] dir /sys/plait-ck: /sys is not writable ("));
  CHECK_FALSE(fs::exists(dir / "run"));
}

TEST_CASE("refused: a combination the data plugin lacks, and dimensions that do not fit", "[cli]") {
  TempDir dir;
  auto r = refuse(dir, "[parallel]\ndata = \"fixture-good\"\n[train]\ngrad_accum = 4\n",
                  {{"PLAIT_PLUGIN_PATH", std::string(PLAIT_FIXTURE_DIR) + "/good"}});
  check_refused(r);
  // The other side's line is named too.
  CHECK_THAT(r.result.output, Contains("run.toml:2:1: data plugin 'fixture-good' cannot be combined with "
                                       "train.grad_accum = 4 (") &&
                                  Contains("run.toml:4:1): it lacks the capability 'grad_accum'"));
  // Checkpoints need a data plugin that can describe its state (SDK state_parts / load_state).
  auto saves = refuse(dir, "[parallel]\ndata = \"fixture-good\"\n[checkpoint]\nevery = 2\n",
                      {{"PLAIT_PLUGIN_PATH", std::string(PLAIT_FIXTURE_DIR) + "/good"}});
  check_refused(saves);
  CHECK_THAT(saves.result.output, Contains("run.toml:2:1: data plugin 'fixture-good' cannot be combined with "
                                           "checkpoint.every = 2 (") &&
                                      Contains("run.toml:4:1): it lacks the capability 'checkpoint'"));
  auto r2 = refuse(dir, "[model]\nn_embd = 66\n");
  check_refused(r2);
  CHECK_THAT(r2.result.output, Contains("n_embd 66 is not a multiple of n_head 4"));
}

TEST_CASE("a command line plait cannot read exits 2 in plait's words, naming the command's --help", "[cli]") {
  const ProcessResult unknown = run_plait({"run", "x.toml", "--stesp", "3"});
  CHECK(unknown.exit_code == 2);
  CHECK_THAT(unknown.output, Contains("error: plait run has no option --stesp (did you mean '--steps'?)") &&
                                 Contains("hint: `plait run --help` lists what it takes") &&
                                 !Contains("The following argument"));
  const ProcessResult missing = run_plait({"checkpoint", "diff", "only-one"});
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.output, Contains("hint: `plait checkpoint diff --help` lists what it takes"));
  CHECK(run_plait({"run", "--help"}).exit_code == 0);
}

TEST_CASE("a damaged checkpoint index is refused in plain words, never the JSON library's", "[cli]") {
  TempDir dir;
  const fs::path run = dir / "run";
  REQUIRE(run_quickstart(run, 2, {"parallel.dp=1"}).exit_code == 0);
  const fs::path index = run / "checkpoints" / "step-2" / "index.json";
  const std::string good = read_file(index);
  auto resume_says = [&](const std::string& text) {
    write_file(index, text);
    const ProcessResult r = run_plait({"checkpoint", "inspect", (run / "checkpoints" / "step-2").string()});
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, !Contains("json.exception"));
    return r.output;
  };
  CHECK_THAT(resume_says(good.substr(0, good.size() / 2)), Contains("index.json is not valid JSON: it is damaged at line ") &&
                                                               !Contains("parse error") && !Contains("syntax error"));
  nlohmann::json negative = nlohmann::json::parse(good);
  negative["step"] = -5;
  negative["state"]["trainer"]["step"] = -5;  // else the two steps' disagreement is what is said
  CHECK_THAT(resume_says(negative.dump()), Contains("the checkpoint index says step -5") &&
                                               Contains("which no run can have saved"));
  nlohmann::json wrong_type = nlohmann::json::parse(good);
  wrong_type["tokens"] = "many";
  CHECK_THAT(resume_says(wrong_type.dump()),
             Contains("index.json: the checkpoint index is damaged: its \"tokens\" holds \"many\" where a whole number belongs"));
  fs::remove(index);
  fs::create_directory(index);
  const ProcessResult folder = run_plait({"checkpoint", "inspect", (run / "checkpoints" / "step-2").string()});
  CHECK_THAT(folder.output, Contains("index.json is not a file: the checkpoint's index must be one"));
  CHECK_THAT(folder.output, !Contains("basic_filebuf"));
}

TEST_CASE("plait export refuses in its own words, leaves nothing half-written, and checks --shard-mb", "[cli]") {
  TempDir dir;
  const fs::path run = dir / "run";
  REQUIRE(run_quickstart(run, 2, {"parallel.dp=1"}).exit_code == 0);
  write_file(dir / "taken" / "config.json", "{}");
  const ProcessResult taken = run_plait({"export", run.string(), "--hf", (dir / "taken").string()});
  CHECK(taken.exit_code == 1);
  CHECK_THAT(taken.output, Contains(concat("the export folder ", (dir / "taken").string(), " already exists and is not empty")) &&
                               Contains("choose another --hf") && !Contains("run folder") && !Contains("--out"));
  const ProcessResult huge = run_plait({"export", run.string(), "--hf", (dir / "hf").string(), "--shard-mb", "1e12"});
  CHECK(huge.exit_code == 1);
  CHECK_THAT(huge.output, Contains("--shard-mb 1e12: at most 1000000000 (a petabyte)"));
  CHECK_FALSE(fs::exists(dir / "hf"));
}

TEST_CASE("a resume is refused before launch when its checkpoint fails a checksum or traces a step it skips", "[cli]") {
  TempDir dir;
  const fs::path run = dir / "run";
  REQUIRE(run_quickstart(run, 4, {"parallel.dp=1", "checkpoint.every=2"}).exit_code == 0);
  const std::vector<std::string> resume = {"run", source_path("configs/quickstart.toml"), "--steps", "6", "--set",
                                           "parallel.dp=1", "--resume", (run / "checkpoints" / "step-2").string()};
  auto with = [&](std::vector<std::string> more, const fs::path& out) {
    std::vector<std::string> args = resume;
    args.insert(args.end(), more.begin(), more.end());
    args.insert(args.end(), {"--out", out.string()});
    return run_plait(args);
  };
  const ProcessResult traced = with({"--set", "debug.trace_steps=[1, 4]"}, dir / "traced");
  CHECK(traced.exit_code == 1);
  CHECK_THAT(traced.output, Contains("[debug] trace_steps names step 1, but this run resumes after step 2: it would never "
                                     "be traced"));
  CHECK_FALSE(fs::exists(dir / "traced"));
  // One byte of one file flipped: refused before any rank starts, naming the file.
  fs::path file;
  for (const auto& e : fs::directory_iterator(run / "checkpoints" / "step-2")) {
    if (e.path().extension() == ".safetensors") file = e.path();
  }
  REQUIRE(!file.empty());
  std::string bytes = read_file(file);
  bytes[bytes.size() - 3] = static_cast<char>(bytes[bytes.size() - 3] ^ 0x40);
  write_file(file, bytes);
  const ProcessResult damaged = with({}, dir / "damaged");
  INFO(damaged.output);
  CHECK(damaged.exit_code == 1);
  CHECK_THAT(damaged.output, Contains(file.filename().string()) && Contains("fails its checksum"));
  CHECK_FALSE(fs::exists(dir / "damaged"));
}

TEST_CASE("a collective that times out names the rank, the group and operation, and [distributed] collective_timeout_s",
          "[cli]") {
  TempDir dir;
  const fs::path out = dir / "run";
  const ProcessResult r = run_plait({"run", source_path("configs/quickstart.toml"), "--steps", "3", "--out", out.string(),
                                     "--set", "parallel.data=ddp", "--set", "parallel.dp=2", "--set",
                                     "distributed.collective_timeout_s=2", "--set", "debug.faults=[\"hang rank=1 step=2\"]"});
  INFO(r.output);
  CHECK(r.exit_code != 0);
  const std::string log = read_file(out / "rank-0.log");
  INFO(log);
  CHECK_THAT(log, Contains(" on group dp.0 for ") && Contains(" timed out on rank 0 after ") &&
                      Contains("the limit [distributed] collective_timeout_s sets: a peer of the group never joined it"));
  CHECK_THAT(r.output + log, !Contains("Operation timed out!"));
}
