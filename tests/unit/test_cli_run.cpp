#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "io/safetensors.hpp"
#include "plait/sdk/error.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;

namespace {

std::vector<double> losses(const fs::path& run) {
  std::vector<double> out;
  for (const auto& m : read_metrics(run)) out.push_back(m.at("loss").get<double>());
  return out;
}

void write_tokens(const fs::path& path, int n) {
  std::vector<uint16_t> t(n);
  for (int i = 0; i < n; ++i) t[i] = static_cast<uint16_t>((i * 7 + i / 13) % 256);
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(t.data()), static_cast<std::streamsize>(t.size() * 2));
}

}  // namespace

TEST_CASE("plait run trains in one process: loss falls, every file is written", "[cli]") {
  TempDir dir;
  const auto out = dir / "run";
  ProcessResult r = run_plait({"run", source_path("configs/gpt2-tiny-single.toml"), "--steps", "30", "--out", out.string()});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("step 30/30") && Contains("tok/s") && Contains("eta"));
  for (const char* f : {"config.lock.toml", "metrics.jsonl", "run.log"}) CHECK(fs::exists(out / f));
  const auto metrics = read_metrics(out);
  REQUIRE(metrics.size() == 30);
  for (const char* key : {"step", "loss", "lr", "grad_norm", "tokens", "step_ms", "tokens_per_s", "mfu",
                          "peak_mem_bytes"}) {
    CHECK(metrics[0].contains(key));
  }
  CHECK(metrics[0].at("tokens").get<int64_t>() == 8 * 64);
  CHECK(metrics[0].at("peak_mem_bytes").get<int64_t>() > 0);
  CHECK(metrics.back().at("loss").get<double>() < metrics.front().at("loss").get<double>() - 1.0);
  const std::string lock = read_file(out / "config.lock.toml");
  CHECK_THAT(lock, Contains("[lock]") && Contains("flops_per_token = ") && Contains("peak_flops = 1e+12") &&
                       Contains("warmup_steps = 5") && Contains("steps = 30"));
}

TEST_CASE("more compute threads than the node's cores are warned about, naming the setting", "[cli]") {
  // 64 threads on a machine of fewer cores (every machine this suite runs on); a machine of
  // 64 or more has nothing to warn about.
  if (std::thread::hardware_concurrency() >= 64) return;
  TempDir dir;
  const ProcessResult r = run_plait({"run", source_path("configs/gpt2-tiny-single.toml"), "--steps", "1", "--set",
                                     "train.threads=64", "--out", (dir / "run").string()});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("--set train.threads=64: [train] threads = 64 asks for 64 compute threads on this node's ") &&
                           Contains(" usable cores (1 rank): they preempt each other every step"));
}

TEST_CASE("the final line counts the steps this run trained: not the records it kept, nor an earlier run's",
          "[cli]") {
  TempDir dir;
  const auto config = source_path("configs/gpt2-tiny-single.toml");
  const ProcessResult sparse = run_plait({"run", config, "--steps", "4", "--out", (dir / "sparse").string(), "--set",
                                          "train.log_every=100"});
  INFO(sparse.output);
  CHECK(read_metrics(dir / "sparse").size() == 1);  // only the last step is recorded
  CHECK_THAT(sparse.output, Contains(" over 4 steps in "));
  const ProcessResult first = run_plait({"run", config, "--steps", "6", "--out", (dir / "first").string(), "--set",
                                         "checkpoint.every=3"});
  REQUIRE(first.exit_code == 0);
  const ProcessResult resumed = run_plait({"run", config, "--steps", "10", "--out", (dir / "resumed").string(), "--resume",
                                           (dir / "first").string()});
  INFO(resumed.output);
  CHECK_THAT(resumed.output, Contains(" over 4 steps in "));  // steps 7 to 10
  // A lock file records injected faults, PLAIT_FAULTS' too, with the config that had them.
  const ProcessResult faulted = run_plait({"run", config, "--steps", "2", "--out", (dir / "faulted").string()},
                                          {{"PLAIT_FAULTS", "slow rank=0 ms=1"}});
  CHECK_THAT(read_file(dir / "faulted" / "config.lock.toml"), Contains("faults = [\"slow rank=0 ms=1\"]"));
}

TEST_CASE("a run is deterministic and its lock file reproduces it", "[cli]") {
  TempDir dir;
  const auto a = dir / "a", b = dir / "b", c = dir / "c";
  // One process at 1 intra-op thread: at 2, LibTorch's CPU kernels differ in the last
  // digits in about 1 run in 350 (docs/running.md; tools/twin-runs).
  const std::string config = source_path("configs/gpt2-tiny-single.toml");
  REQUIRE(run_plait({"run", config, "--steps", "5", "--set", "train.threads=1", "--out", a.string()}).exit_code == 0);
  REQUIRE(run_plait({"run", config, "--steps", "5", "--set", "train.threads=1", "--out", b.string()}).exit_code == 0);
  ProcessResult again = run_plait({"run", (a / "config.lock.toml").string(), "--out", c.string()});
  INFO(again.output);
  REQUIRE(again.exit_code == 0);
  CHECK(losses(a) == losses(b));
  CHECK(losses(a) == losses(c));
}

TEST_CASE("gradient accumulation normalises by token count: 2 x B=4 equals 1 x B=8", "[cli]") {
  TempDir dir;
  write_tokens(dir / "tokens.bin", 40000);
  write_file(dir / "base.toml",
             "[model]\nsize = \"tiny\"\n[data]\nsource = \"tokens\"\npath = \"tokens.bin\"\norder = \"sequential\"\n"
             "seq_len = 32\n[train]\nsteps = 4\ndtype = \"float64\"\nlr = 1e-3\n[debug]\ndump_grads = true\n");
  const auto whole = dir / "whole", accum = dir / "accum";
  auto base = (dir / "base.toml").string();
  REQUIRE(run_plait({"run", base, "--set", "data.micro_batch_size=8", "--out", whole.string()}).exit_code == 0);
  REQUIRE(run_plait({"run", base, "--set", "data.micro_batch_size=4", "--set", "train.grad_accum=2", "--out",
                     accum.string()})
              .exit_code == 0);
  const auto lw = losses(whole), la = losses(accum);
  REQUIRE(lw.size() == 4);
  for (std::size_t i = 0; i < lw.size(); ++i) CHECK(la[i] == Approx(lw[i]).epsilon(1e-10));
  auto gw = load_safetensors((whole / "debug_grads.safetensors").string());
  auto ga = load_safetensors((accum / "debug_grads.safetensors").string());
  REQUIRE(gw.size() == ga.size());
  for (std::size_t i = 0; i < gw.size(); ++i) {
    INFO(gw[i].first);
    CHECK(at::allclose(gw[i].second, ga[i].second, 1e-10, 1e-12));
  }
}

TEST_CASE("save_init and save_final write reference-named safetensors", "[cli]") {
  TempDir dir;
  const auto out = dir / "run";
  ProcessResult r = run_plait({"run", source_path("configs/gpt2-tiny-single.toml"), "--steps", "2", "--out", out.string(),
                               "--set", "checkpoint.save_init=true", "--set", "checkpoint.save_final=true"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto init = load_safetensors((out / "init.safetensors").string());
  auto final = load_safetensors((out / "final.safetensors").string());
  REQUIRE(init.size() == final.size());
  CHECK(init[0].first == "transformer.wte.weight");
  CHECK_FALSE(at::equal(init[0].second, final[0].second));  // two steps moved the weights

  // Pipeline ranks build only their own stages (and tp ranks their slices): the saved
  // initial weights, gathered from every stage, are still the single process's.
  const auto split = dir / "split";
  ProcessResult pp = run_quickstart(split, 1, {"parallel.pipeline=1f1b", "parallel.pp=2", "parallel.dp=1",
                                               "parallel.tensor=megatron", "parallel.tp=2", "parallel.data=single",
                                               "checkpoint.save_init=true"});
  INFO(pp.output);
  REQUIRE(pp.exit_code == 0);
  auto pipelined = load_safetensors((split / "init.safetensors").string());
  REQUIRE(pipelined.size() == init.size());
  std::map<std::string, at::Tensor> by_name(init.begin(), init.end());
  for (const auto& [name, tensor] : pipelined) {
    INFO(name);
    REQUIRE(by_name.count(name) == 1);
    CHECK(at::equal(tensor, by_name.at(name)));
  }
}

TEST_CASE("llama, bf16, float64 and text data all train", "[cli]") {
  TempDir dir;
  write_file(dir / "corpus.txt", std::string(20000, 'a') + "the quick brown fox jumps over the lazy dog\n");
  const std::vector<std::vector<std::string>> variants = {
      {"--set", "model.family=llama"},
      {"--set", "train.dtype=bfloat16"},
      {"--set", "train.dtype=float64", "--set", "model.family=llama"},
      {"--set", "data.source=text", "--set", concat("data.path=", (dir / "corpus.txt").string())},
  };
  int i = 0;
  for (const auto& v : variants) {
    std::vector<std::string> args = {"run", source_path("configs/gpt2-tiny-single.toml"), "--steps", "3", "--out",
                                     (dir / ("run" + std::to_string(i++))).string()};
    args.insert(args.end(), v.begin(), v.end());
    ProcessResult r = run_plait(args);
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.output, Contains("step 3/3"));
  }
}
