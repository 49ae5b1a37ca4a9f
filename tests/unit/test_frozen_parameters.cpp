// [train] freeze: frozen parameters get no gradient, reduction, shard or optimizer state.
// Every strategy trains the rest as the single process does (float64, 1e-10), the frozen
// ones leave training bit-identical to their initial values, checkpoints hold them and
// resume, and bad patterns or a plugin that cannot freeze are refused before launch.
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

// The embeddings and the first block: 14 of the quickstart's 28 parameters.
const std::string kFreeze = R"(train.freeze=["transformer.w?e.weight", "transformer.h.0.*"])";

void expect_frozen_check(int dp, int accum, std::vector<std::string> sets) {
  TempDir dir;
  sets.push_back(kFreeze);
  const ProcessResult r = quickstart_check(dir, dp, "float64", accum, sets);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("PASS") && Contains("gradients after step 1: 14 parameters"));
}

}  // namespace

TEST_CASE("frozen parameters: ddp with accumulation and zero 1, 2, 3 equal the single process", "[frozen]") {
  expect_frozen_check(2, 2, {"parallel.data=ddp"});
  for (const char* stage : {"1", "2", "3"}) {
    INFO("zero stage " << stage);
    expect_frozen_check(2, 2, {"parallel.data=zero", concat("zero.stage=", stage)});
  }
}

TEST_CASE("frozen parameters: fsdp, 1f1b over 2 stages (the tied embedding frozen), megatron tp 2 with sequence "
          "parallel and dp 2 x pp 2 x tp 2 equal the single process",
          "[frozen]") {
  expect_frozen_check(2, 2, {"parallel.data=fsdp"});
  expect_frozen_check(1, 4, {"parallel.data=single", "parallel.pipeline=1f1b", "parallel.pp=2"});
  expect_frozen_check(1, 2, {"parallel.data=single", "parallel.tensor=megatron", "parallel.tp=2",
                             "megatron.sequence_parallel=true"});
  expect_frozen_check(2, 2, {"parallel.data=zero", "zero.stage=1", "parallel.pipeline=1f1b", "parallel.pp=2",
                             "parallel.tensor=megatron", "parallel.tp=2", "megatron.sequence_parallel=true"});
}

TEST_CASE("frozen parameters leave training as they started, are checkpointed, and resume on another mesh",
          "[frozen]") {
  TempDir dir;
  const std::vector<std::string> sets{"parallel.data=zero", "zero.stage=3", "parallel.dp=2", kFreeze,
                                      "checkpoint.every=2"};
  ProcessResult r = run_quickstart(dir / "run", 4, sets);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  // The seed's weights, as every rank made them before training.
  const PreparedRun prep = prepare_run(source_path("configs/quickstart.toml"), {});
  auto factory = make_dense_layer_factory();
  const StageModel initial =
      build_model(prep.model, *factory, {static_cast<uint64_t>(prep.config->train().seed), at::TensorOptions()});
  checkpoint::CheckpointReader reader(dir / "run/checkpoints/step-4");
  int frozen = 0, trained = 0;
  for (const ParamRef& p : initial.all_parameters()) {
    INFO(p.name);
    const bool same = at::equal(stored_param(reader, p.name), p.tensor.reshape({-1}));
    const bool is_frozen = p.name.starts_with("transformer.h.0.") || p.name == "transformer.wte.weight" ||
                           p.name == "transformer.wpe.weight";
    CHECK(same == is_frozen);
    (is_frozen ? frozen : trained) += 1;
  }
  CHECK((frozen == 14 && trained == 14));
  // No optimizer state for them, and only the trainable ones' (two fp32 moments, sharded
  // over 2 ranks): a quarter of the run without freezing holds 8 x numel.
  CHECK(reader.index().tensors.count("exp_avg/transformer.wte.weight") == 0);
  CHECK(reader.index().tensors.count("exp_avg/transformer.h.1.mlp.c_fc.weight") == 1);
  // Resume from step 2 on one rank under ddp: the same steps 3 and 4.
  r = run_quickstart(dir / "again", 4,
                     {"parallel.data=ddp", "parallel.dp=1", "train.grad_accum=2", kFreeze,
                      "checkpoint.resume_from=" + (dir / "run/checkpoints/step-2").string()});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto first = read_metrics(dir / "run"), again = read_metrics(dir / "again");
  REQUIRE(first.size() == 4);
  REQUIRE(again.size() == 2);
  for (int k = 0; k < 2; ++k) {
    CHECK(again[k].at("loss").get<double>() == Approx(first[k + 2].at("loss").get<double>()).epsilon(1e-5));
  }
}

// [train] frozen_dtype = "bfloat16" under bf16 compute: autocast reads a linear's fp32
// weight as its bf16 rounding at every use, so storing that rounding once computes the
// same run bit for bit (zero 3 over 2 ranks here; by hand, LoRA under dp 2 x pp 2 x tp 2
// with sequence parallel too) in half the weights' bytes, as plait plan predicts them.
TEST_CASE("frozen linears stored in bf16 train exactly what fp32 ones do, in half their bytes, checkpointed in bf16 "
          "and resumed",
          "[frozen]") {
  TempDir dir;
  const std::vector<std::string> sets{"parallel.data=zero", "zero.stage=3", "parallel.dp=2", "train.dtype=bfloat16",
                                      R"(train.freeze=["transformer.h.*"])", "checkpoint.every=2"};
  std::vector<std::string> bf16 = sets;
  bf16.push_back("train.frozen_dtype=bfloat16");
  for (const auto& [name, s] : {std::pair{"fp32", sets}, std::pair{"bf16", bf16}}) {
    const ProcessResult r = run_quickstart(dir / name, 4, s);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
  }
  const auto fp32 = read_metrics(dir / "fp32"), stored = read_metrics(dir / "bf16");
  REQUIRE((fp32.size() == 4 && stored.size() == 4));
  for (std::size_t k = 0; k < 4; ++k) {
    INFO("step " << k + 1);
    CHECK(stored[k].at("loss").get<double>() == fp32[k].at("loss").get<double>());
    CHECK(stored[k].at("grad_norm").get<double>() == fp32[k].at("grad_norm").get<double>());
  }
  // The blocks' four weight matrices each lose 2 bytes an element; biases and norms stay fp32.
  const PreparedRun prep = prepare_run(source_path("configs/quickstart.toml"), {});
  const int64_t C = prep.model.n_embd, F = prep.model.ffn_hidden;
  const int64_t weights = prep.model.n_layer * (C * 3 * C + C * C + C * F + F * C);
  const double frozen = stored.back().at("frozen_param_bytes").get<double>();
  CHECK(frozen == fp32.back().at("frozen_param_bytes").get<double>() - 2.0 * static_cast<double>(weights));
  checkpoint::CheckpointReader reader(dir / "bf16/checkpoints/step-4");
  CHECK(reader.index().tensors.at("param/transformer.h.1.mlp.c_fc.weight").dtype == "BF16");
  CHECK(reader.index().tensors.at("param/transformer.h.1.mlp.c_fc.bias").dtype == "F32");
  checkpoint::CheckpointReader initial(dir / "fp32/checkpoints/step-4");
  CHECK(at::equal(stored_param(reader, "transformer.h.0.attn.c_attn.weight"),
                  stored_param(initial, "transformer.h.0.attn.c_attn.weight").to(at::kBFloat16)));
  // plait plan --explain predicts the halved weights.
  std::vector<std::string> plan = {"plan", "--explain", source_path("configs/quickstart.toml"), "--gpus", "2", "--json"};
  for (const auto& s : bf16) plan.insert(plan.end(), {"--set", s});
  const ProcessResult planned = run_plait(plan);
  REQUIRE(planned.exit_code == 0);
  const auto predicted = nlohmann::json::parse(planned.output.substr(planned.output.find('{'))).at("ranks").at(0);
  CHECK(predicted.at("frozen_param_bytes").get<double>() == frozen);
  // Resumed from step 2, the bf16 weights read back: the same steps 3 and 4, bit for bit.
  std::vector<std::string> resume = bf16;
  resume.push_back("checkpoint.resume_from=" + (dir / "bf16/checkpoints/step-2").string());
  const ProcessResult r = run_quickstart(dir / "again", 4, resume);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto again = read_metrics(dir / "again");
  REQUIRE(again.size() == 2);
  for (int k = 0; k < 2; ++k) CHECK(again[k].at("loss").get<double>() == stored[k + 2].at("loss").get<double>());
}

// A frozen weight has no gradient: its product's input is kept for nothing (unless an
// adapter reads it) and its backward skips the weight's product. plait plan's
// activations against the run's measured ones, and the products' time it predicts
// against the same model trained whole.
TEST_CASE("plait plan counts what frozen weights leave out: the inputs kept for their gradients and their backward "
          "products",
          "[frozen]") {
  struct Frozen {
    std::string family, freeze;
  };
  for (const Frozen& c : {Frozen{"gpt2", R"(["transformer.h.0.*"])"}, Frozen{"llama", R"(["model.layers.1.*"])"},
                          Frozen{"llama", R"(["model.layers.*.mlp.*", "model.layers.*.input_layernorm.weight"])"}}) {
    INFO(c.family << " freezing " << c.freeze);
    TempDir dir;
    const std::vector<std::string> sets = {"model.family=" + c.family, "train.freeze=" + c.freeze,
                                           "parallel.data=single", "parallel.dp=1"};
    const ProcessResult r = run_quickstart(dir / "run", 1, sets);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const double measured = read_metrics(dir / "run").front().at("activation_bytes").get<double>();
    auto planned = [&](bool frozen) {
      std::vector<std::string> args = {"plan", "--explain", source_path("configs/quickstart.toml"), "--gpus", "1", "--json"};
      for (const auto& s : sets) {
        if (frozen || !s.starts_with("train.freeze")) args.insert(args.end(), {"--set", s});
      }
      const ProcessResult p = run_plait(args);
      REQUIRE(p.exit_code == 0);
      return nlohmann::json::parse(p.output.substr(p.output.find('{')));
    };
    const nlohmann::json frozen = planned(true), whole = planned(false);
    const double predicted = frozen.at("ranks").at(0).at("activation_bytes").get<double>();
    CHECK(predicted == Approx(measured).epsilon(0.02));
    CHECK(whole.at("ranks").at(0).at("activation_bytes").get<double>() > 1.03 * measured);
    CHECK(frozen.at("phases").at("compute_ms").get<double>() < 0.95 * whole.at("phases").at("compute_ms").get<double>());
  }
}

// A data plugin without the capability `frozen` is refused too: test_sdk_compat.cpp.
TEST_CASE("freezing is refused before launch: a pattern that matches nothing or everything, and bf16 storage without bf16 compute or with nothing frozen", "[frozen]") {
  TempDir dir;
  auto refused = [&](const std::vector<std::string>& sets) {
    const ProcessResult r = run_quickstart(dir / "run", 1, sets);
    CHECK(r.exit_code != 0);
    CHECK(!std::filesystem::exists(dir / "run/metrics.jsonl"));
    return r.output;
  };
  CHECK_THAT(refused({R"(train.freeze=["transformer.h.7.*"])"}),
             Contains("--set train.freeze=") && Contains("[train] freeze pattern \"transformer.h.7.*\" matches no parameter") &&
                 Contains("such as \"transformer.wte.weight\""));
  CHECK_THAT(refused({R"(train.freeze=["*"])"}), Contains("[train] freeze freezes all 28 parameters: nothing would train"));
  CHECK_THAT(refused({"train.frozen_dtype=bfloat16", "parallel.adapter=lora"}),
             Contains("--set train.frozen_dtype=bfloat16: [train] frozen_dtype = \"bfloat16\" needs bf16 compute") &&
                 Contains("set [train] dtype = \"bfloat16\""));
  CHECK_THAT(refused({"train.frozen_dtype=bfloat16", "train.dtype=bfloat16"}),
             Contains("[train] frozen_dtype = \"bfloat16\", but nothing is frozen"));
}
