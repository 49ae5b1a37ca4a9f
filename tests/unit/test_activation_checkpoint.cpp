// Activation checkpointing: `full` keeps about 2sbh (fp16-byte units; 4sbh bytes in
// fp32) per layer, `selective` drops the attention core's T x T softmax (Korthikanti et
// al.'s 5as^2b: 2as^2b of softmax output without dropout, so 4as^2b bytes in fp32),
// measured as activation_bytes in metrics.jsonl; losses do not change; both compose
// with data-parallel plugins and pipelines (gradient hooks fire from the recomputation).
#include <catch2/catch.hpp>

#include "plait/sdk/error.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;

namespace {

struct Measured {
  std::vector<double> losses;
  double activation_bytes = 0;
};

Measured run_single(int layers, const std::string& mode, const std::string& attention = "sdpa") {
  TempDir dir;
  ProcessResult r = run_plait({"run", source_path("configs/quickstart.toml"), "--steps", "3", "--out",
                               (dir / "run").string(), "--set", "parallel.data=single", "--set", "parallel.dp=1", "--set",
                               concat("model.n_layer=", layers), "--set",
                               concat("train.activation_checkpointing=", mode), "--set",
                               concat("model.attention=", attention),
                               // bit-for-bit comparisons of one-process runs need 1 thread (docs/running.md)
                               "--set", "train.threads=1"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  Measured m;
  for (const auto& step : read_metrics(dir / "run")) {
    m.losses.push_back(step.at("loss").get<double>());
    m.activation_bytes = step.at("activation_bytes").get<double>();
  }
  return m;
}

}  // namespace

TEST_CASE("full checkpointing keeps 2sbh per layer and leaves every loss unchanged", "[activations]") {
  // quickstart: s = 64, b = 8, h = 64, float32. A layer's share is the difference
  // between 4 and 2 layers, so embeddings and head cancel out.
  const double sbh = 64.0 * 8 * 64;
  const Measured none2 = run_single(2, "none"), none4 = run_single(4, "none");
  const Measured full2 = run_single(2, "full"), full4 = run_single(4, "full");
  CHECK(full2.losses == none2.losses);  // recomputation is exact
  CHECK(full4.losses == none4.losses);
  const double full_per_layer = (full4.activation_bytes - full2.activation_bytes) / 2;
  const double none_per_layer = (none4.activation_bytes - none2.activation_bytes) / 2;
  INFO("per layer: full " << full_per_layer << " bytes, none " << none_per_layer << " bytes, sbh " << sbh);
  CHECK(std::abs(full_per_layer - 4 * sbh) / (4 * sbh) < 0.05);  // 2sbh in fp16 bytes = 4sbh in fp32
  CHECK(none_per_layer > 10 * full_per_layer);
}

TEST_CASE("selective checkpointing drops the attention core's softmax, 4as^2b per layer in fp32", "[activations]") {
  // quickstart: a = 4 heads, s = 64, b = 8. Per layer: the difference of 4 and 2 layers.
  const double softmax = 4.0 * 4 * 64 * 64 * 8;
  const Measured none2 = run_single(2, "none", "math"), none4 = run_single(4, "none", "math");
  const Measured sel2 = run_single(2, "selective", "math"), sel4 = run_single(4, "selective", "math");
  CHECK(sel2.losses == none2.losses);
  CHECK(sel4.losses == none4.losses);
  const double dropped = ((none4.activation_bytes - none2.activation_bytes) -
                          (sel4.activation_bytes - sel2.activation_bytes)) / 2;
  INFO("per layer, selective keeps " << dropped << " bytes fewer; 4as^2b = " << softmax);
  // The rest is the causal mask, s^2 bytes of bool shared by the batch.
  CHECK(std::abs(dropped - softmax) / softmax < 0.01);
  // The fused kernel keeps no T x T tensor: selective saves only its log-sum-exp there.
  const Measured fused = run_single(2, "none", "sdpa"), fused_sel = run_single(2, "selective", "sdpa");
  CHECK(fused_sel.losses == fused.losses);
  CHECK(fused_sel.activation_bytes < fused.activation_bytes);
  CHECK(fused.activation_bytes - fused_sel.activation_bytes < softmax / 10);
}

TEST_CASE("selective checkpointing with ddp and with a 1f1b pipeline equals the single process", "[activations]") {
  for (const std::vector<std::string>& sets :
       {std::vector<std::string>{"parallel.data=ddp"},
        std::vector<std::string>{"parallel.data=single", "parallel.dp=1", "parallel.pipeline=1f1b", "parallel.pp=2"}}) {
    TempDir dir;
    std::vector<std::string> all = {"train.activation_checkpointing=selective", "model.attention=math"};
    all.insert(all.end(), sets.begin(), sets.end());
    expect_check_passed(dir, quickstart_check(dir, sets.size() == 1 ? 2 : 1, "float64", 2, all), "float64");
  }
}

TEST_CASE("full checkpointing with fsdp equals the single process (float64, accumulation)", "[activations]") {
  TempDir dir;
  expect_check_passed(dir,
                      quickstart_check(dir, 2, "float64", 2,
                                       {"parallel.data=fsdp", "train.activation_checkpointing=full"}),
                      "float64");
}

TEST_CASE("full checkpointing with ddp equals the single process (float32, accumulation)", "[activations]") {
  TempDir dir;
  expect_check_passed(dir,
                      quickstart_check(dir, 2, "float32", 2,
                                       {"parallel.data=ddp", "train.activation_checkpointing=full"}),
                      "float32");
}
