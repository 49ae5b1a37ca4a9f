#include <algorithm>
#include <regex>

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "plait/sdk/error.hpp"
#include "plait/sdk/version.hpp"
#include "support/test_support.hpp"
#include "support/token_files.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;

TEST_CASE("config show prints the merged config, resolved and with provenance", "[cli]") {
  TempDir dir;
  write_file(dir / "bundle.toml", "[train]\nlr = 0.01\nsteps = 9\n");
  const auto config = write_file(dir / "run.toml", "extends = [\"bundle.toml\"]\n[train]\nsteps = 4\n");
  ProcessResult merged = run_plait({"config", "show", config.string()});
  REQUIRE(merged.exit_code == 0);
  CHECK_THAT(merged.output, Contains("lr = 0.01") && Contains("steps = 4") && !Contains("beta1"));
  // Checked against the schemas as a run is, for the machine it is meant for: a GPU job's
  // config shows on a CPU machine as written.
  const auto gpu = write_file(dir / "gpu.toml", "[train]\ndevice = \"cuda\"\n[parallel]\ncomm = \"nccl\"\ndata = \"ddp\"\ndp = 8\n");
  ProcessResult on_gpus = run_plait({"config", "show", gpu.string()});
  INFO(on_gpus.output);
  CHECK(on_gpus.exit_code == 0);
  CHECK_THAT(on_gpus.output, Contains("comm = \"nccl\"") && Contains("device = \"cuda\""));
  ProcessResult resolved = run_plait({"config", "show", config.string(), "--resolved", "--provenance", "--set",
                                      "train.seed=5"});
  INFO(resolved.output);
  REQUIRE(resolved.exit_code == 0);
  CHECK_THAT(resolved.output, Contains("bundle.toml:2:1") && Contains("run.toml:3:1") && Contains("# default") &&
                                  Contains("# --set train.seed=5") && Contains("beta1 = 0.9"));
}

TEST_CASE("config validate checks without writing anything", "[cli]") {
  TempDir dir;
  const auto config = write_file(dir / "run.toml", "[train]\nsteps = 4\n");
  ProcessResult ok = run_plait({"config", "validate", config.string()});
  CHECK(ok.exit_code == 0);
  CHECK_THAT(ok.output, Contains("valid") && Contains("data=single"));
  ProcessResult bad = run_plait({"config", "validate", config.string(), "--set", "train.setps=3"});
  CHECK(bad.exit_code != 0);
  CHECK_THAT(bad.output, Contains("--set train.setps=3: unknown key 'setps' in [train] (did you mean 'steps'?)"));
}

TEST_CASE("plugins --json describes each plugin with its options", "[cli]") {
  ProcessResult r = run_plait({"plugins", "--json"}, {{"PLAIT_PLUGIN_PATH", std::string(PLAIT_FIXTURE_DIR) + "/good"}});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.output);
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& p : j.at("plugins")) by_name[p.at("name").get<std::string>()] = p;
  REQUIRE(by_name.count("single"));
  CHECK(by_name["single"].at("kind") == "data");
  CHECK(by_name["single"].at("api") == PLAIT_API_VERSION_STRING);
  REQUIRE(by_name.count("fixture-good"));
  CHECK(by_name["fixture-good"].at("options")[0].at("key") == "knob");
  CHECK(j.at("refused").empty());
  ProcessResult refused = run_plait({"plugins"}, {{"PLAIT_PLUGIN_PATH", std::string(PLAIT_FIXTURE_DIR) + "/next_major"}});
  CHECK(refused.exit_code != 0);
  CHECK_THAT(refused.output, Contains("refused: ") && Contains("another major version"));
}

TEST_CASE("models lists every family and size with its parameter count", "[cli]") {
  ProcessResult r = run_plait({"models"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("gpt2   124m") && Contains("124475904") && Contains("Llama-2-7B") &&
                           Contains("6738415616") && Contains("llama  70b"));
}

// A bundle is validated as a config that extends it with a small model of 4 blocks
// (3d-megatron's interleaved schedule wants a block per virtual stage), and for a bundle
// that packs documents, a token file with some.
TEST_CASE("every shipped config validates", "[cli]") {
  TempDir dir;
  PlaitTokens documents;
  for (int i = 0; i < 4000; ++i) documents.tokens.push_back(static_cast<uint16_t>(i % 200));
  for (int64_t start = 0; start < 4000; start += 50) documents.starts.push_back(start);
  const fs::path tokens = write_plait_tokens(dir / "documents.plait", documents);
  int checked = 0;
  for (const auto& entry : fs::recursive_directory_iterator(source_path("configs"))) {
    if (entry.path().extension() != ".toml") continue;
    // The planner's machines are not run configs: the plan tests read every one.
    if (entry.path().parent_path().filename() == "hardware") continue;
    // The fine-tuning example reads what tools/lora_sft_example.py makes: the python test
    // lora_sft_example.py makes it and runs the config as given.
    if (entry.path().filename() == "lora-sft.toml" && entry.path().parent_path().filename() == "configs") continue;
    std::string config = entry.path().string();
    if (entry.path().parent_path().filename() == "bundles") {
      const bool packs = read_file(entry.path()).find("packing = true") != std::string::npos;
      config = write_file(dir / entry.path().filename(),
                          "extends = [\"" + config + "\"]\n[model]\nn_layer = 4\n" +
                              (packs ? "[data]\nsource = \"tokens\"\npath = \"" + tokens.string() + "\"\n" : ""))
                   .string();
    }
    ProcessResult r = run_plait({"config", "validate", config});
    INFO(entry.path().string() << "\n" << r.output);
    CHECK(r.exit_code == 0);
    ++checked;
  }
  CHECK(checked >= 3);
}

TEST_CASE("config validate --hardware checks a GPU config for that machine from one without a GPU", "[cli]") {
  TempDir dir;
  const auto config = write_file(dir / "gpus.toml",
                                 "[model]\nfamily = \"gpt2\"\nsize = \"tiny\"\n[data]\nsource = \"synthetic\"\n"
                                 "micro_batch_size = 8\nseq_len = 64\n[train]\nsteps = 10\ndevice = \"cuda\"\n"
                                 "dtype = \"bfloat16\"\n[parallel]\ndata = \"ddp\"\ndp = -1\ncomm = \"nccl\"\n");
  const ProcessResult here = run_plait({"config", "validate", config.string(), "--nproc-per-node", "16"});
  INFO(here.output);
  CHECK(here.exit_code != 0);  // no machine running this suite has 16 GPUs
  const ProcessResult there =
      run_plait({"config", "validate", config.string(), "--hardware", "h100-sxm", "--gpus", "16"});
  INFO(there.output);
  REQUIRE(there.exit_code == 0);
  CHECK_THAT(there.output, Contains(": valid for 16 x h100-sxm (") && Contains("2 nodes") &&
                               Contains("dp 16 x pp 1 x tp 1"));
  if (here.output.find("no CUDA device is visible") != std::string::npos) {
    CHECK_THAT(there.output, Contains("left to that machine, not checked here: [train] device = \"cuda\" (" +
                                      config.string() + ":10:1)"));
  }
  // plan --explain asks for no device either.
  const ProcessResult explained = run_plait({"plan", "--explain", config.string(), "--hardware", "h100-sxm", "--gpus", "16"});
  INFO(explained.output);
  CHECK(explained.exit_code == 0);

  // What the machine asks of the config, each refused naming the flag or the line.
  const ProcessResult cpu = run_plait({"config", "validate", config.string(), "--hardware", "h100-sxm", "--gpus", "16",
                                       "--set", "train.device=cpu", "--set", "parallel.comm=gloo"});
  CHECK(cpu.exit_code == 1);
  CHECK_THAT(cpu.output, Contains("--set train.device=cpu: [train] device = \"cpu\", but h100-sxm's accelerators are "
                                  "cuda devices"));
  const ProcessResult gloo =
      run_plait({"config", "validate", config.string(), "--hardware", "h100-sxm", "--set", "parallel.comm=gloo", "--gpus", "8"});
  CHECK(gloo.exit_code == 1);
  CHECK_THAT(gloo.output, Contains("[parallel] comm = \"gloo\" moves CPU tensors, and h100-sxm's ranks hold CUDA ones") &&
                              Contains("set [parallel] comm = \"nccl\""));
  const ProcessResult partial = run_plait({"config", "validate", config.string(), "--hardware", "h100-sxm", "--gpus", "12"});
  CHECK(partial.exit_code == 1);
  CHECK_THAT(partial.output, Contains("--gpus 12: h100-sxm's nodes hold 8 accelerators each, and 12 do not fill whole "
                                      "nodes"));
  const ProcessResult alone = run_plait({"config", "validate", config.string(), "--gpus", "8"});
  CHECK(alone.exit_code == 1);
  CHECK_THAT(alone.output, Contains("--gpus 8 says the ranks of a machine, and there is no --hardware"));
  const ProcessResult placed =
      run_plait({"config", "validate", config.string(), "--hardware", "h100-sxm", "--nproc-per-node", "8"});
  CHECK(placed.exit_code == 1);
  CHECK_THAT(placed.output, Contains("--hardware checks a config for a machine described by its file"));
}

TEST_CASE("a checkpoint's save line rounds its figures, and one process waits for no other ranks", "[cli]") {
  TempDir dir;
  // Three significant digits, whole from 1000 on: "0.0169 s (65.6 MB/s", never "0.0169238".
  auto rounded = [](std::string shown) {
    INFO(shown);
    if (shown.find('.') == std::string::npos && shown.find('e') == std::string::npos) return true;  // whole
    shown = shown.substr(0, shown.find('e'));
    shown.erase(std::remove(shown.begin(), shown.end(), '.'), shown.end());
    return shown.size() - std::min(shown.size(), shown.find_first_not_of('0')) <= 3;
  };
  const std::regex save("saved in ([^ ]+) s \\(([^ ]+) MB/s");
  for (const int ranks : {1, 2}) {
    const std::vector<std::string> sets =
        ranks == 1 ? std::vector<std::string>{"parallel.data=single", "parallel.dp=1"} : std::vector<std::string>{};
    const ProcessResult r = run_quickstart(dir / concat("run", ranks), 2, sets);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    std::smatch m;
    REQUIRE(std::regex_search(r.output, m, save));
    CHECK(rounded(m[1].str()));
    CHECK(rounded(m[2].str()));
    CHECK((r.output.find("waiting for the other ranks") != std::string::npos) == (ranks > 1));
    CHECK((r.output.find("writing its file") != std::string::npos) == (ranks == 1));
  }
}
