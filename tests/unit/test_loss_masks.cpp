// Loss masks: targets of -1 do not count. The sampler gives every rank the global batch's
// count of counted targets, and every strategy divides by it (float64, 1e-10 against the
// single process, through `plait check`).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>

#include <ATen/ATen.h>

#include "data/sampler.hpp"
#include "plait/sdk/error.hpp"
#include "support/test_support.hpp"
#include "support/token_files.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;

namespace {

constexpr int64_t kT = 64;  // the quickstart's seq_len
constexpr uint64_t kSeed = 1337;

BatchSampler masked_sampler(int64_t dp, int64_t rank, int64_t rows) {
  SamplerSpec spec = sampler_spec("random", rows, kT, dp, rank);
  spec.seed = kSeed;
  spec.vocab_size = 256;
  spec.mask_prompts = true;
  return {spec, nullptr, std::make_shared<SyntheticLanguage>(256, kSeed)};
}

int64_t counted_here(const Batch& b) { return b.targets.ne(-1).sum().item<int64_t>(); }

// Targets of -1 only as a prefix of each row: a prompt, then what counts.
bool masks_are_prefixes(const Batch& b) {
  const at::Tensor counted = b.targets.ne(-1).to(at::kLong);
  return at::equal(counted, std::get<0>(counted.cummax(1)));
}

void expect_masked_check(int dp, int accum, std::vector<std::string> sets, const TempDir& dir = TempDir()) {
  if (std::none_of(sets.begin(), sets.end(), [](const std::string& s) { return s.starts_with("data.source="); })) {
    sets.emplace_back("data.mask_prompts=true");
  }
  sets.emplace_back("data.micro_batch_size=1");
  ProcessResult r = quickstart_check(dir, dp, "float64", accum, sets);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("PASS"));
  const std::vector<nlohmann::json> steps = read_metrics(dir / "check/reference");
  REQUIRE(steps.size() == 4);
  for (const auto& m : steps) CHECK(m.at("counted_tokens").get<int64_t>() < m.at("tokens").get<int64_t>());
  // Per counted target: an untrained model's loss is near ln 256 = 5.55 (over every
  // target, a third lower here).
  CHECK(steps.front().at("loss").get<double>() == Approx(std::log(256.0)).margin(0.3));
}

}  // namespace

TEST_CASE("with masked prompts every rank knows the global batch's counted targets, the same for any split",
          "[masks]") {
  BatchSampler one = masked_sampler(1, 0, 4);
  BatchSampler first = masked_sampler(2, 0, 2), second = masked_sampler(2, 1, 2);
  for (int k = 0; k < 10; ++k) {
    const Batch whole = one.next(), a = first.next(), b = second.next();
    INFO("global batch " << k);
    CHECK(whole.counted == counted_here(whole));
    CHECK(a.counted == whole.counted);
    CHECK(b.counted == whole.counted);
    CHECK(counted_here(a) + counted_here(b) == whole.counted);
    CHECK(at::equal(at::cat({a.targets, b.targets}), whole.targets));
    CHECK(masks_are_prefixes(whole));
  }
}

TEST_CASE("the quickstart's first sixteen samples hold rows counted in part and a row with nothing counted",
          "[masks]") {
  // One row a microbatch: the checks below train on samples 0-15 (4 steps of dp x
  // grad_accum rows), so some microbatch there has no counted target.
  BatchSampler rows = masked_sampler(1, 0, 1);
  int nothing = 0, part = 0;
  for (int s = 0; s < 16; ++s) {
    const Batch b = rows.next();
    CHECK(b.inputs.min().item<int64_t>() >= 0);  // a prompt's masked targets leave its inputs be
    const int64_t counted = b.counted;
    nothing += counted == 0 ? 1 : 0;
    part += counted > 0 && counted < kT ? 1 : 0;
  }
  CHECK(nothing >= 1);
  CHECK(part >= 8);
}

TEST_CASE("masked prompts are refused for a file source, naming the setting", "[masks]") {
  TempDir dir;
  ProcessResult r = run_plait({"run", source_path("configs/quickstart.toml"), "--steps", "1", "--out",
                               (dir / "run").string(), "--set", "data.source=text", "--set", "data.path=notes.txt",
                               "--set", "data.mask_prompts=true"});
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains("data.mask_prompts") && Contains("source = \"text\" has no prompts to mask"));
  CHECK(!std::filesystem::exists(dir / "run/metrics.jsonl"));
}

TEST_CASE("ddp with masked prompts and gradient accumulation equals the single process", "[masks]") {
  expect_masked_check(2, 2, {"parallel.data=ddp"});
}

TEST_CASE("zero 1, 2 and 3 with masked prompts equal the single process", "[masks]") {
  for (const char* stage : {"1", "2", "3"}) {
    INFO("zero stage " << stage);
    expect_masked_check(2, 2, {"parallel.data=zero", concat("zero.stage=", stage)});
  }
}

TEST_CASE("fsdp with masked prompts equals the single process", "[masks]") {
  expect_masked_check(2, 2, {"parallel.data=fsdp"});
}

TEST_CASE("1f1b and interleaved 1f1b over 2 stages with masked prompts equal the single process", "[masks]") {
  expect_masked_check(1, 4, {"parallel.data=single", "parallel.pipeline=1f1b", "parallel.pp=2"});
  expect_masked_check(1, 4, {"parallel.data=single", "parallel.pipeline=interleaved-1f1b", "parallel.pp=2",
                             "interleaved-1f1b.virtual_stages=2", "model.n_layer=4"});
}

TEST_CASE("megatron tp 2 with sequence parallel and masked prompts equals the single process", "[masks]") {
  expect_masked_check(1, 2, {"parallel.data=single", "parallel.tensor=megatron", "parallel.tp=2",
                             "megatron.sequence_parallel=true"});
}

TEST_CASE("dp 2 x pp 2 x tp 2 under zero 1 with masked prompts equals the single process", "[masks]") {
  expect_masked_check(2, 2, {"parallel.data=zero", "zero.stage=1", "parallel.pipeline=1f1b", "parallel.pp=2",
                             "parallel.tensor=megatron", "parallel.tp=2", "megatron.sequence_parallel=true"});
}

// A token file as tools/prepare_data.py writes it: documents of a prompt (not counted)
// and a response (counted), prompts up to 169 tokens: longer than a row of 64.
std::string write_sft_file(const TempDir& dir) {
  PlaitTokens f;
  f.vocab_size = 256;
  const SyntheticLanguage language(256, 5);
  for (int64_t d = 0; f.tokens.size() < 4000; ++d) {
    const int64_t prompt = 20 + (d * 37) % 150, response = 10 + (d * 53) % 90;
    std::vector<int64_t> doc(static_cast<std::size_t>(prompt + response));
    language.sequence(d, prompt + response, doc.data());
    f.starts.push_back(static_cast<int64_t>(f.tokens.size()));
    for (int64_t i = 0; i < prompt + response; ++i) {
      f.tokens.push_back(static_cast<uint16_t>(doc[static_cast<std::size_t>(i)]));
      f.mask.push_back(i >= prompt ? 1 : 0);
    }
  }
  return write_plait_tokens(dir / "sft.bin", f).string();
}

void expect_file_check(int dp, int accum, std::vector<std::string> sets, bool packing) {
  TempDir dir;
  sets.insert(sets.end(), {"data.source=tokens", "data.path=" + write_sft_file(dir), "data.order=sequential"});
  if (packing) sets.emplace_back("data.packing=true");
  expect_masked_check(dp, accum, sets, dir);
}

TEST_CASE("a token file's loss mask under zero 3 and interleaved 1f1b equals the single process", "[masks]") {
  expect_file_check(2, 2, {"parallel.data=zero", "zero.stage=3"}, false);
  expect_file_check(1, 4, {"parallel.data=single", "parallel.pipeline=interleaved-1f1b", "parallel.pp=2",
                           "interleaved-1f1b.virtual_stages=2", "model.n_layer=4"}, false);
}

TEST_CASE("packed rows with a loss mask: ddp with accumulation and zero 1, 2, 3 equal the single process",
          "[masks][packing]") {
  expect_file_check(2, 2, {"parallel.data=ddp"}, true);
  for (const char* stage : {"1", "2", "3"}) {
    INFO("zero stage " << stage);
    expect_file_check(2, 2, {"parallel.data=zero", concat("zero.stage=", stage)}, true);
  }
}

TEST_CASE("packed rows with a loss mask: fsdp, with full checkpointing, equals the single process", "[masks][packing]") {
  expect_file_check(2, 2, {"parallel.data=fsdp", "train.activation_checkpointing=full"}, true);
}

TEST_CASE("packed rows with a loss mask: 1f1b and interleaved 1f1b over 2 stages equal the single process",
          "[masks][packing]") {
  expect_file_check(1, 4, {"parallel.data=single", "parallel.pipeline=1f1b", "parallel.pp=2"}, true);
  expect_file_check(1, 4, {"parallel.data=single", "parallel.pipeline=interleaved-1f1b", "parallel.pp=2",
                           "interleaved-1f1b.virtual_stages=2", "model.n_layer=4"}, true);
}

TEST_CASE("packed rows with a loss mask: megatron tp 2 with sequence parallel equals the single process, gpt2 and "
          "llama",
          "[masks][packing]") {
  const std::vector<std::string> tp{"parallel.data=single", "parallel.tensor=megatron", "parallel.tp=2",
                                    "megatron.sequence_parallel=true"};
  expect_file_check(1, 2, tp, true);
  std::vector<std::string> llama = tp;
  llama.insert(llama.end(), {"model.family=llama", "model.size=tiny", "train.activation_checkpointing=selective"});
  expect_file_check(1, 2, llama, true);
}

TEST_CASE("packed rows with a loss mask: dp 2 x pp 2 x tp 2 under zero 1 equals the single process",
          "[masks][packing]") {
  expect_file_check(2, 2, {"parallel.data=zero", "zero.stage=1", "parallel.pipeline=1f1b", "parallel.pp=2",
                           "parallel.tensor=megatron", "parallel.tp=2", "megatron.sequence_parallel=true"},
                    true);
}
