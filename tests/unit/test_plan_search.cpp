// plait plan --model: the search space (every mesh, every plugin with its schema's plan
// values, the core's checkpointing modes, every microbatch split), the ranking, what is
// set aside and why, and --write's config, which `plait config validate` accepts and
// `plait plan --explain` predicts the same.
#include <algorithm>
#include <array>
#include <cmath>
#include <set>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "config/config_loader.hpp"
#include "config/schema.hpp"
#include "plait/sdk/error.hpp"
#include "plan/hardware.hpp"
#include "plan/search_space.hpp"
#include "run/prepare.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;

namespace {

ModelSpec named(const std::string& family, const std::string& size) {
  for (const NamedSize& n : named_sizes()) {
    if (n.spec.family == family && n.spec.size == size) return n.spec;
  }
  FAIL("no model " << family << " " << size);
  return {};
}

nlohmann::json search_json(const std::vector<std::string>& args) {
  std::vector<std::string> all = {"plan"};
  all.insert(all.end(), args.begin(), args.end());
  return plait_json(all);
}

}  // namespace

TEST_CASE("the search space: every mesh of the accelerators, every plugin with its plan values, every batch split",
          "[plan]") {
  const PluginRegistry registry = discover_plugins();
  SearchLimits limits;
  limits.gpus = 64;
  limits.gpus_per_node = 8;
  limits.global_batch = 128;
  limits.offload = true;
  const ModelSpec llama = named("llama", "70b");
  const std::vector<PlanCandidate> all = enumerate_candidates(registry, llama, limits);
  REQUIRE_FALSE(all.empty());
  std::set<std::string> sets;
  std::set<std::array<int64_t, 3>> meshes;
  for (const PlanCandidate& c : all) {
    INFO(c.plugins);
    CHECK(c.dp * c.pp * c.tp == 64);
    CHECK(c.tp <= 8);
    CHECK(llama.n_layer % c.pp == 0);
    CHECK(c.dp * c.micro_batch * c.grad_accum == 128);
    meshes.insert({c.dp, c.pp, c.tp});
    sets.insert(c.sets.begin(), c.sets.end());
    // A schedule only with stages, a tensor plugin only with tensor parallel.
    const bool piped = std::find(c.sets.begin(), c.sets.end(), "parallel.pipeline=none") == c.sets.end();
    const bool split = std::find(c.sets.begin(), c.sets.end(), "parallel.tensor=none") == c.sets.end();
    CHECK(piped == (c.pp > 1));
    CHECK(split == (c.tp > 1));
  }
  // tp 1, 2, 4, 8 with pp 1, 2, 4, 8, 16 (80 blocks), but not tp 8 with pp 16 (128 > 64): 19 meshes.
  CHECK(meshes.size() == 19);
  // The plugins' plan values (their schemas) and the core's, each tried.
  for (const char* s : {"zero.stage=1", "zero.stage=2", "zero.stage=3", "fsdp.shard_size=0", "fsdp.shard_size=8",
                        "megatron.sequence_parallel=true", "interleaved-1f1b.virtual_stages=4", "parallel.pipeline=gpipe",
                        "parallel.offload=cpu", "cpu.params=true", "train.activation_checkpointing=\"selective\"",
                        "data.micro_batch_size=8"}) {
    INFO(s);
    CHECK(sets.count(s) == 1);
  }
}

TEST_CASE("a plugin schema's plan values must be valid values of the option", "[plan]") {
  CHECK_THROWS_WITH(parse_schema("[stage]\ntype = \"int\"\ndefault = 1\nmax = 3\nplan = [1, 4]\ndoc = \"d\"\n", "zz",
                                 "plugin 'zz'"),
                    Contains("[zz].stage: 4 is above the maximum 3"));
  CHECK_THROWS_WITH(parse_schema("[stage]\ntype = \"int\"\ndefault = 1\nplan = 2\ndoc = \"d\"\n", "zz", "plugin 'zz'"),
                    Contains("the schema of plugin 'zz', key 'stage': plan must be an array"));
}

TEST_CASE("plait plan --model ranks what fits by tokens/s, sets the rest aside with why, and --write saves the best",
          "[plan]") {
  TempDir dir;
  const auto written = dir / "best.toml";
  const nlohmann::json j = search_json({"--model", "gpt2-124m", "--gpus", "8", "--hardware", "a100-80g",
                                        "--global-batch", "64", "--top", "10", "--write", written.string()});
  CHECK(j.at("model") == "gpt2 124m");
  CHECK(j.at("candidates").get<int64_t>() ==
        j.at("fitting").get<int64_t>() + j.at("out_of_memory").get<int64_t>() + j.at("refused").get<int64_t>());
  const nlohmann::json& plans = j.at("plans");
  REQUIRE(plans.size() == 10);
  for (std::size_t i = 0; i < plans.size(); ++i) {
    CHECK(plans[i].at("fits").get<bool>());
    CHECK(plans[i].at("gpus").get<int64_t>() == 8);
    CHECK(plans[i].at("tokens_per_step").get<double>() == 64.0 * 1024);
    if (i > 0) CHECK(plans[i].at("tokens_per_s_per_gpu").get<double>() <= plans[i - 1].at("tokens_per_s_per_gpu").get<double>());
  }
  // The plugins' own refusals are among what was set aside, in their words.
  bool zero_said = false;
  for (const auto& group : j.at("set_aside")) {
    zero_said = zero_said || group.at("example").get<std::string>().find("zero: ") != std::string::npos;
  }
  CHECK(zero_said);

  // The written config runs on the machine (its device, communicator and peak), is valid
  // for it from here and, explained here, predicts what the search did.
  const std::string text = read_file(written);
  CHECK_THAT(text, Contains("# plait plan: the best of ") && Contains("device = \"cuda\"") &&
                       Contains("comm = \"nccl\""));
  CHECK(text.find("[gloo]") == std::string::npos);
  const LoadedConfig loaded = load_config(written.string(), {});
  CHECK(loaded.tree.find("train", "peak_flops")->value.floating == Approx(312e12));  // a100-80g's bf16 peak
  const ProcessResult valid =
      run_plait({"config", "validate", written.string(), "--hardware", "a100-80g", "--gpus", "8"});
  INFO(valid.output);
  CHECK(valid.exit_code == 0);
  CHECK_THAT(valid.output, Contains("valid for 8 x a100-80g"));
  const nlohmann::json e = plait_json({"plan", "--explain", written.string(), "--hardware", "a100-80g"});
  CHECK(e.at("phases").at("step_ms").get<double>() == Approx(plans[0].at("phases").at("step_ms").get<double>()));
  CHECK(e.at("ranks").at(0).at("device_bytes") == plans[0].at("ranks").at(0).at("device_bytes"));
}

TEST_CASE("plait plan --write for a CPU machine keeps [train] device \"cpu\" and gloo, with the machine's peak",
          "[plan]") {
  TempDir dir;
  const fs::path cpu = write_file(dir / "cpus.toml", concat("extends = \"", shipped_hardware_dir(),
                                                             "/a100-80g.toml\"\n[hardware]\ndevice = \"cpu\"\n"));
  const Hardware hw = load_hardware(cpu.string());
  REQUIRE(hw.device == "cpu");
  CHECK(hw.comm == "gloo");
  const auto written = dir / "best.toml";
  const nlohmann::json j = search_json({"--model", "gpt2-124m", "--gpus", "8", "--hardware", cpu.string(),
                                        "--global-batch", "64", "--set", "train.dtype=float32", "--write",
                                        written.string()});
  REQUIRE_FALSE(j.at("plans").empty());
  const LoadedConfig loaded = load_config(written.string(), {});
  CHECK(loaded.tree.find("train", "device")->value.string == "cpu");
  CHECK(loaded.tree.find("parallel", "comm")->value.string == "gloo");
  CHECK(loaded.tree.find("train", "peak_flops")->value.floating == Approx(hw.peak_fp32_tflops * 1e12));  // float32's
  const ProcessResult valid = run_plait({"config", "validate", written.string(), "--hardware", cpu.string()});
  INFO(valid.output);
  CHECK(valid.exit_code == 0);
  CHECK(valid.output.find("left to that machine") == std::string::npos);  // nothing here it cannot check
}

TEST_CASE("plait plan --write --bundle saves the best plan's own choices, which a config of the model extends", "[plan]") {
  TempDir dir;
  const auto bundle = dir / "best-8-a100.toml";
  const nlohmann::json j = search_json({"--model", "gpt2-124m", "--gpus", "8", "--hardware", "a100-80g",
                                        "--global-batch", "64", "--write", bundle.string(), "--bundle"});
  const nlohmann::json& best = j.at("plans").at(0);
  const std::string text = read_file(bundle);
  CHECK_THAT(text, Contains("# gpt2 124m on 8 x a100-80g: ") && Contains("(plait plan's best, "));
  CHECK_THAT(text, Contains("[parallel]") && Contains("dp = " + std::to_string(best.at("dp").get<int64_t>())));
  // Only the plan's choices: no model, no data source, no device.
  CHECK(text.find("[model]") == std::string::npos);
  CHECK(text.find("source") == std::string::npos);
  CHECK(text.find("device") == std::string::npos);
  // The search's own base run extending it is the plan the search predicted.
  const fs::path config = write_file(dir / "mine.toml", concat("extends = [\"", source_path("configs/plan/pretrain.toml"),
                                                               "\", \"", bundle.string(), "\"]\n"));
  const ProcessResult valid = run_plait({"config", "validate", config.string()});
  INFO(valid.output);
  CHECK(valid.exit_code == 0);
  const nlohmann::json e = plait_json({"plan", "--explain", config.string(), "--hardware", "a100-80g"});
  CHECK(e.at("phases").at("step_ms").get<double>() == Approx(best.at("phases").at("step_ms").get<double>()));
  CHECK(e.at("ranks").at(0).at("device_bytes") == best.at("ranks").at(0).at("device_bytes"));

  const ProcessResult alone = run_plait({"plan", "--model", "gpt2-124m", "--gpus", "8", "--bundle"});
  CHECK(alone.exit_code == 1);
  CHECK_THAT(alone.output, Contains("--bundle says how the search's --write saves the best plan"));
}

TEST_CASE("plait plan --model says when nothing fits, and refuses what it cannot plan before searching", "[plan]") {
  // An A100 node with 64 GiB of host memory: llama 70b does not fit on 2, offloaded or not.
  TempDir dir;
  const fs::path small = write_file(dir / "small-host.toml", concat("extends = \"", shipped_hardware_dir(),
                                                                    "/a100-80g.toml\"\n[node]\nhost_memory_gib = 64.0\n"));
  const nlohmann::json none = search_json({"--model", "llama-70b", "--gpus", "2", "--hardware", small.string(),
                                           "--global-batch", "8"});
  CHECK(none.at("fitting").get<int64_t>() == 0);
  CHECK(none.at("out_of_memory").get<int64_t>() > 0);
  CHECK(none.at("plans").empty());
  const ProcessResult nothing = run_plait({"plan", "--model", "llama-70b", "--gpus", "2", "--hardware", small.string(),
                                           "--global-batch", "8", "--write", (dir / "best.toml").string()});
  CHECK(nothing.exit_code == 1);
  CHECK_THAT(nothing.output, Contains("--write ") && Contains(": no plan fits, so none is written"));
  CHECK_FALSE(fs::exists(dir / "best.toml"));

  const ProcessResult unknown = run_plait({"plan", "--model", "llama-9b", "--gpus", "8"});
  CHECK(unknown.exit_code == 1);
  CHECK_THAT(unknown.output, Contains("--model llama-9b: not a model plait knows as family-size") &&
                                 Contains("`plait models` lists them"));
  const ProcessResult no_gpus = run_plait({"plan", "--model", "llama-7b"});
  CHECK(no_gpus.exit_code == 1);
  CHECK_THAT(no_gpus.output, Contains("plait plan --model needs --gpus N"));
  const ProcessResult both = run_plait({"plan", "--model", "llama-7b", "--explain", source_path("configs/quickstart.toml")});
  CHECK(both.exit_code == 1);
  CHECK_THAT(both.output, Contains("plait plan takes --model or --explain (--against), not both"));
  const ProcessResult neither = run_plait({"plan", "--gpus", "8"});
  CHECK(neither.exit_code == 1);
  CHECK_THAT(neither.output, Contains("plait plan needs --model NAME|CONFIG (a search) or --explain CONFIG"));
  write_file(dir / "taken.toml", "# mine\n");
  const ProcessResult taken = run_plait({"plan", "--model", "gpt2-124m", "--gpus", "8", "--write", (dir / "taken.toml").string()});
  CHECK(taken.exit_code == 1);
  CHECK_THAT(taken.output, Contains("the file exists"));
  CHECK(read_file(dir / "taken.toml") == "# mine\n");
}

TEST_CASE("plait plan --tokens prices the best plan's run, and --scale finds the best at each accelerator count",
          "[plan]") {
  const nlohmann::json j = search_json({"--model", "gpt2-124m", "--gpus", "8", "--hardware", "a100-80g",
                                        "--global-batch", "64", "--tokens", "1e10", "--scale", "8,16"});
  const nlohmann::json& cost = j.at("cost");
  const nlohmann::json& best = j.at("plans").at(0);
  CHECK(cost.at("steps").get<double>() == std::ceil(1e10 / best.at("tokens_per_step").get<double>()));
  CHECK(cost.at("training_hours").get<double>() ==
        Approx(cost.at("steps").get<double>() * best.at("phases").at("step_ms").get<double>() / 3.6e6));
  CHECK(cost.at("wall_hours").get<double>() >= cost.at("training_hours").get<double>());
  CHECK(cost.at("gpu_hours").get<double>() == Approx(8 * cost.at("wall_hours").get<double>()));
  CHECK(cost.at("on_demand").get<double>() == Approx(1.80 * cost.at("gpu_hours").get<double>()));  // a100-80g.toml
  const nlohmann::json& scale = j.at("scale");
  REQUIRE(scale.size() == 2);
  CHECK(scale[0].at("gpus").get<int64_t>() == 8);
  CHECK(scale[1].at("gpus").get<int64_t>() == 16);
  // At 8 the scale's best is the search's own.
  CHECK(scale[0].at("best").at("tokens_per_s_per_gpu") == best.at("tokens_per_s_per_gpu"));
  CHECK(scale[1].at("best").at("gpus").get<int64_t>() == 16);
  CHECK(scale[1].at("cost").at("gpu_hours").get<double>() > 0);

  const ProcessResult bad = run_plait({"plan", "--model", "gpt2-124m", "--gpus", "8", "--scale", "8,x"});
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.output, Contains("--scale x: expected a whole number"));
}

TEST_CASE("plait plan: plans with the same predicted step time and memory share a rank, and the table says why",
          "[plan]") {
  const ProcessResult r = run_plait({"plan", "--model", "llama-7b", "--gpus", "8"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  // fsdp shard_size 0 and 8 and zero 3 shard alike at dp 8: one prediction, one rank.
  CHECK_THAT(r.output, Contains("  1 ") && Contains("fsdp shard_size=0") && Contains("fsdp shard_size=8"));
  CHECK_THAT(r.output, !Contains("\n  2 "));
  CHECK_THAT(r.output, Contains("plans of one rank have the same predicted step time and memory"));
}
