// lora: LoRA adapters under every data plugin, pipeline schedule and megatron tensor
// parallel (with sequence parallel) train what the single process trains (float64,
// 1e-10, with the adapters' dropout); the frozen base leaves
// training bit for bit as it started; model state per rank is the adapters' formula plus
// the frozen base; checkpoints resume; the export and combination refusals. The hand-back
// to PEFT and transformers is tests/python/lora_peft.py.
#include <catch2/catch.hpp>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "support/checkpoint_params.hpp"
#include "model/dense_layers.hpp"
#include "model/model_zoo.hpp"
#include "plait/sdk/error.hpp"
#include "run/prepare.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;

namespace {

// Every linear of the quickstart's 2 blocks: 4 adapted per block, 16 adapter tensors.
const std::vector<std::string> kLora = {"parallel.adapter=lora", "lora.rank=4", "lora.alpha=8",
                                        R"(lora.targets=["c_attn", "c_proj", "c_fc"])"};

// llama: all seven linears of its 2 blocks (q|k|v and gate|up fused under megatron), 28 adapter tensors.
const std::string kLlamaTargets =
    R"(lora.targets=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])";

void expect_lora_check(int dp, int accum, std::vector<std::string> sets, int adapter_tensors = 16) {
  TempDir dir;
  sets.insert(sets.begin(), kLora.begin(), kLora.end());
  sets.push_back("lora.dropout=0.1");
  const ProcessResult r = quickstart_check(dir, dp, "float64", accum, sets);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("PASS") && Contains(concat("gradients after step 1: ", adapter_tensors, " parameters")));
}

std::vector<std::string> with_lora(std::vector<std::string> sets) {
  sets.insert(sets.end(), kLora.begin(), kLora.end());
  return sets;
}

}  // namespace

TEST_CASE("lora: ddp with accumulation, zero 1, 2 and 3 and fsdp train the single process's adapters", "[lora]") {
  expect_lora_check(2, 2, {"parallel.data=ddp"});
  for (const char* stage : {"1", "2", "3"}) {
    INFO("zero stage " << stage);
    expect_lora_check(2, 2, {"parallel.data=zero", concat("zero.stage=", stage)});
  }
  expect_lora_check(2, 2, {"parallel.data=fsdp"});
}

TEST_CASE("lora: 1f1b and interleaved 1f1b over 2 stages, and dp 2 x pp 2, train the single process's adapters",
          "[lora]") {
  expect_lora_check(1, 4, {"parallel.data=single", "parallel.pipeline=1f1b", "parallel.pp=2"});
  expect_lora_check(1, 4, {"parallel.data=single", "parallel.pipeline=interleaved-1f1b", "parallel.pp=2",
                           "model.n_layer=4"},
                    32);
  expect_lora_check(2, 2, {"parallel.data=zero", "zero.stage=1", "parallel.pipeline=1f1b", "parallel.pp=2"});
}

TEST_CASE("lora beside megatron: tp 2 (gpt2, its fused q|k|v one adapter), tp 2 with sequence parallel (llama, "
          "q|k|v and gate|up fused) and dp 2 x pp 2 x tp 2 train the single process's adapters",
          "[lora]") {
  const std::vector<std::string> tp2 = {"parallel.data=single", "parallel.tensor=megatron", "parallel.tp=2"};
  expect_lora_check(1, 2, tp2);
  std::vector<std::string> llama = tp2;
  llama.insert(llama.end(), {"megatron.sequence_parallel=true", "model.family=llama", kLlamaTargets});
  expect_lora_check(1, 2, llama, 28);
  expect_lora_check(2, 2, {"parallel.data=zero", "zero.stage=1", "parallel.pipeline=1f1b", "parallel.pp=2",
                           "parallel.tensor=megatron", "parallel.tp=2", "megatron.sequence_parallel=true"});
}

// The adapters ride in megatron's products: its traffic per step does not grow (it falls,
// since nothing before the first adapted linear needs an input gradient); what grows is
// the data plugin's sum of the replicated factors' partial gradients over tp.
TEST_CASE("lora beside megatron adds no megatron traffic", "[lora]") {
  double megatron[2] = {0, 0}, partial[2] = {0, 0};
  for (int with = 0; with < 2; ++with) {
    TempDir dir;
    std::vector<std::string> sets = {"parallel.data=single", "parallel.dp=1", "parallel.tensor=megatron", "parallel.tp=2"};
    if (with) sets.insert(sets.end(), kLora.begin(), kLora.end());
    const ProcessResult r = run_quickstart(dir / "run", 2, sets);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const auto records = read_metrics(dir / "run");
    const nlohmann::json& by = records.back().at("comm_bytes_by");
    megatron[with] = by.at("megatron").get<double>();
    partial[with] = by.at("single").get<double>();
  }
  CHECK(megatron[1] > 0);
  CHECK(megatron[1] <= megatron[0]);
  CHECK(partial[1] > partial[0]);
}

TEST_CASE("lora: the base stays as it started, model state is the adapters' formula plus the frozen base (as plait "
          "plan predicts it), and a checkpoint resumes on another mesh",
          "[lora]") {
  TempDir dir;
  ProcessResult r = run_quickstart(dir / "run", 4,
                                   with_lora({"parallel.data=zero", "zero.stage=3", "parallel.dp=2", "checkpoint.every=2"}));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const PreparedRun prep = prepare_run(source_path("configs/quickstart.toml"), {});
  const ModelSpec& m = prep.model;
  auto factory = make_dense_layer_factory();
  const StageModel initial = build_model(m, *factory, {static_cast<uint64_t>(prep.config->train().seed), at::TensorOptions()});
  checkpoint::CheckpointReader reader(dir / "run/checkpoints/step-4");
  int64_t base = 0;
  for (const ParamRef& p : initial.all_parameters()) {
    INFO(p.name);
    CHECK(at::equal(stored_param(reader, p.name), p.tensor.reshape({-1})));
    CHECK(reader.index().tensors.count("exp_avg/" + p.name) == 0);
    base += p.tensor.numel();
  }
  CHECK(!at::equal(stored_param(reader, "transformer.h.1.mlp.c_fc.lora_B.weight"),
                   at::zeros({m.ffn_hidden * 4}, at::kDouble).to(at::kFloat)));
  // r (in + out) per adapted linear: c_attn C -> 3C, attn.c_proj C -> C, c_fc C -> F, mlp.c_proj F -> C.
  const int64_t C = m.n_embd, F = m.ffn_hidden, adapters = 4 * m.n_layer * ((C + 3 * C) + (C + C) + (C + F) + (F + C));
  const auto last = read_metrics(dir / "run").back();
  // zero 3 over 2 ranks: half the adapters, their gradients and two moments each; the frozen base whole.
  CHECK(last.at("param_bytes").get<double>() == Approx(4.0 * adapters / 2).epsilon(0.01));
  CHECK(last.at("grad_bytes").get<double>() == Approx(4.0 * adapters / 2).epsilon(0.01));
  CHECK(last.at("optimizer_bytes").get<double>() == Approx(8.0 * adapters / 2).epsilon(0.01));
  CHECK(last.at("frozen_param_bytes").get<double>() == Approx(4.0 * base).epsilon(0.01));
  // plait plan --explain predicts the same state, adapters and frozen base apart.
  std::vector<std::string> plan = {"plan", "--explain", source_path("configs/quickstart.toml"), "--gpus", "2", "--json"};
  for (const auto& s : with_lora({"parallel.data=zero", "zero.stage=3", "parallel.dp=2"})) plan.insert(plan.end(), {"--set", s});
  const ProcessResult planned = run_plait(plan);
  REQUIRE(planned.exit_code == 0);
  const auto predicted = nlohmann::json::parse(planned.output.substr(planned.output.find('{'))).at("ranks").at(0);
  for (const char* key : {"param_bytes", "grad_bytes", "optimizer_bytes", "frozen_param_bytes"}) {
    INFO(key);
    CHECK(predicted.at(key).get<double>() == Approx(last.at(key).get<double>()).epsilon(0.01));
  }
  // And the activations within 5%: the frozen linears' inputs that no adapter reads are kept
  // for nothing (3.8% over here: the first block, behind a frozen embedding, keeps nothing
  // for its input's gradient either, which the planner does not model; 1 block in 2 here).
  CHECK(predicted.at("activation_bytes").get<double>() == Approx(last.at("activation_bytes").get<double>()).epsilon(0.05));
  // Resume from step 2 on one ddp rank: the same steps 3 and 4.
  r = run_quickstart(dir / "again", 4,
                     with_lora({"parallel.data=ddp", "parallel.dp=1", "train.grad_accum=2",
                                "checkpoint.resume_from=" + (dir / "run/checkpoints/step-2").string()}));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto first = read_metrics(dir / "run"), again = read_metrics(dir / "again");
  REQUIRE(again.size() == 2);
  for (int k = 0; k < 2; ++k) {
    CHECK(again[k].at("loss").get<double>() == Approx(first[k + 2].at("loss").get<double>()).epsilon(1e-5));
  }
  // The export refuses to drop the adapters, and --merge asks for a checkpoint that has some.
  r = run_plait({"export", (dir / "run").string(), "--hf", (dir / "hf").string()});
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains("holds the adapters of 'lora' beside its frozen model: --hf alone would leave them out") &&
                           Contains("add --merge"));
  CHECK(!std::filesystem::exists(dir / "hf"));
}

// lora's AdapterCostModel (API 12.9): what each adapter keeps per token (its dropped input
// and mask under dropout, A's output) and its products. plait plan's activations against
// the measured ones; the 2-block quickstart is the hard case (its first block, behind a
// frozen embedding, is half the model: GPT-2 124M with dropout 0.05 is within 0.5%).
TEST_CASE("plait plan predicts lora's activations within 5%: dropout, llama's seven linears, tp 2 with sequence "
          "parallel",
          "[lora]") {
  auto measured_and_planned = [](std::vector<std::string> sets) {
    TempDir dir;
    sets.insert(sets.end(), {"parallel.adapter=lora", "parallel.data=single", "parallel.dp=1"});
    const ProcessResult r = run_quickstart(dir / "run", 2, sets);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const bool tp2 = std::find(sets.begin(), sets.end(), "parallel.tp=2") != sets.end();
    std::vector<std::string> plan = {"plan", "--explain", source_path("configs/quickstart.toml"), "--gpus", tp2 ? "2" : "1",
                                     "--json"};
    for (const auto& s : sets) plan.insert(plan.end(), {"--set", s});
    const ProcessResult planned = run_plait(plan);
    INFO(planned.output);
    REQUIRE(planned.exit_code == 0);
    const auto json = nlohmann::json::parse(planned.output.substr(planned.output.find('{')));
    return std::pair{read_metrics(dir / "run").front().at("activation_bytes").get<double>(),
                     json.at("ranks").at(0).at("activation_bytes").get<double>()};
  };
  const std::string gpt2_targets = R"(lora.targets=["c_attn", "c_proj", "c_fc"])";
  const auto [kept, planned] = measured_and_planned({gpt2_targets});
  const auto [kept_dropped, planned_dropped] = measured_and_planned({gpt2_targets, "lora.dropout=0.1"});
  CHECK(planned == Approx(kept).epsilon(0.05));
  CHECK(planned_dropped == Approx(kept_dropped).epsilon(0.05));
  CHECK(planned_dropped - planned == Approx(kept_dropped - kept).epsilon(0.25));  // the dropped copies and masks
  for (const std::vector<std::string>& sets :
       {std::vector<std::string>{"model.family=llama", kLlamaTargets, "lora.dropout=0.1"},
        std::vector<std::string>{"model.family=llama", "parallel.tensor=megatron", "parallel.tp=2",
                                 "megatron.sequence_parallel=true"}}) {
    const auto [measured, predicted] = measured_and_planned(sets);
    INFO(sets.back());
    CHECK(predicted == Approx(measured).epsilon(0.05));
  }
}

TEST_CASE("lora is refused before launch: targets that match no linear, a target megatron cannot place, exports "
          "without adapters",
          "[lora]") {
  TempDir dir;
  auto refused = [&](const std::vector<std::string>& args) {
    const ProcessResult r = run_plait(args);
    CHECK(r.exit_code != 0);
    CHECK(!std::filesystem::exists(dir / "run/metrics.jsonl"));
    return r.output;
  };
  auto run_args = [&](const std::vector<std::string>& sets) {
    std::vector<std::string> args = {"run", source_path("configs/quickstart.toml"), "--steps", "2", "--out",
                                     (dir / "run").string()};
    for (const auto& s : sets) args.insert(args.end(), {"--set", s});
    return args;
  };
  CHECK_THAT(refused(run_args({"parallel.adapter=lora", R"(lora.targets=["c_attn", "q_proj"])"})),
             Contains("--set lora.targets=") && Contains("[lora] target \"q_proj\" matches no linear of the model") &&
                 Contains("the model's linears: c_attn, c_fc, c_proj"));
  CHECK_THAT(refused(run_args({"parallel.adapter=lora", "parallel.tensor=megatron", "parallel.tp=2", "parallel.dp=1",
                                "model.family=llama", R"(lora.targets=["q_proj", "lm_head"])"})),
             Contains("--set parallel.tp=2") &&
                 Contains("megatron: an adapter targets lm_head, which megatron does not split by columns or rows") &&
                 Contains("leave lm_head out of the adapter's targets"));
  CHECK_THAT(refused(run_args({"parallel.adapter=nope"})), Contains("unknown adapter plugin 'nope'"));
  REQUIRE(run_quickstart(dir / "base", 1, {"parallel.data=single", "parallel.dp=1"}).exit_code == 0);
  CHECK_THAT(refused({"export", (dir / "base").string(), "--peft", (dir / "peft").string()}),
             Contains("--peft: checkpoint") && Contains("trained no adapter"));
  CHECK_THAT(refused({"export", (dir / "base").string()}), Contains("plait export needs --hf or --peft"));
  // The adapters go to PEFT unmerged: --merge is said to belong to --hf before anything is read.
  CHECK_THAT(refused({"export", (dir / "base").string(), "--peft", (dir / "peft").string(), "--merge"}),
             Contains("plait export: --merge is taken only with --hf"));
  // [lora]'s options with no adapter chosen would train every weight: refused before the run.
  CHECK_THAT(refused(run_args({"lora.rank=4"})),
             Contains("--set lora.rank=4: [lora] rank is set, but the run trains no adapter ([parallel] adapter = \"none\")"));
  CHECK(!std::filesystem::exists(dir / "peft"));
  CHECK(!std::filesystem::exists(dir / "run"));
}
