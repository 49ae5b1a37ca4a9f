// [train] freeze: frozen parameters get no gradient, reduction, shard or optimizer state.
// Every strategy trains the rest as the single process does (float64, 1e-10), the frozen
// ones leave training bit-identical to their initial values, checkpoints hold them and
// resume, and bad patterns or a plugin that cannot freeze are refused before launch.
#include <catch2/catch.hpp>

#include <ATen/ATen.h>

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

// A data plugin without the capability `frozen` is refused too: test_sdk_compat.cpp.
TEST_CASE("freezing is refused before launch: a pattern that matches nothing, or everything", "[frozen]") {
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
}
