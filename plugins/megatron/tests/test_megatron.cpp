// megatron: tensor parallel on 2 and 4 ranks trains the single process's model (the
// equivalence harness, float64 and float32, gradient accumulation and clipping, both
// model families, the vocabulary split by default and replicated on request), alone and
// under a data-parallel plugin (dp 2 x tp 2), with and without sequence parallelism (also
// with dropout on the sequence parts); its traffic is Megatron's formula.
#include <algorithm>
#include <limits>

#include <catch2/catch.hpp>

#include "plait/sdk/error.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;

namespace {

// quickstart_check's `ranks` is the dp degree; tp comes on top.
void expect_equivalent(const std::string& family, int tp, const std::string& dtype, std::vector<std::string> sets = {}) {
  TempDir dir;
  sets.insert(sets.begin(), {"parallel.tensor=megatron", concat("parallel.tp=", tp), concat("model.family=", family)});
  const bool data_parallel = std::find(sets.begin(), sets.end(), "parallel.dp=2") != sets.end();
  if (!data_parallel) sets.push_back("parallel.data=single");
  ProcessResult r = quickstart_check(dir, data_parallel ? 2 : 1, dtype, 2, sets);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("PASS") &&
                           Contains(concat("gradients after step 1: ", family == "gpt2" ? 28 : 21, " parameters")));
}

// Bytes of activations one block keeps for backward on tp rank 0: the difference of 4
// and 2 blocks, the unfused attention core so its softmax counts.
double block_activation_bytes(int tp, bool sequence_parallel) {
  double held[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    TempDir dir;
    ProcessResult r = run_quickstart(
        dir / "run", 3,
        {"parallel.data=single", "parallel.dp=1", "parallel.tensor=megatron", concat("parallel.tp=", tp),
         concat("megatron.sequence_parallel=", sequence_parallel ? "true" : "false"),
         concat("model.n_layer=", 2 + 2 * i), "model.attention=math"});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    // The least over the steps: gloo's worker thread lets go of a collective's tensors
    // just after the collective completes, and on a loaded machine sometimes only after
    // the forward has counted what it holds (one sbh / t too many, seen on CI: +5%).
    held[i] = std::numeric_limits<double>::max();
    for (const auto& step : read_metrics(dir / "run")) held[i] = std::min(held[i], step.at("activation_bytes").get<double>());
  }
  return (held[1] - held[0]) / 2;
}

// Bus bytes megatron moves per step (comm_bytes_by.megatron: the ring's 2(t-1)/t of
// the payload for an all-reduce, (t-1)/t for an all-gather or reduce-scatter) for the
// quickstart's tiny models (2 blocks, b 8, s 64, h 64, V 256) with 2 microbatches,
// against the formula: per block, and what comes on top around the blocks. And what the
// data plugin moves over tp once per step (comm_bytes_by.none): the global norm's sum
// of the split parameters' squares (one float64), and under sequence parallel the
// partial gradients of the parameters that see only this rank's positions, as one
// all-reduce (Megatron-LM's, after backward).
struct Traffic {
  double per_block = 0, around = 0, data_plugin = 0;
};

Traffic traffic_formula(const std::string& family, int tp, bool vocab_parallel, bool sequence_parallel) {
  const double layers = 2, b = 8, s = 64, h = 64, V = 256, m = 2;
  const double r = (tp - 1.0) / tp * sizeof(float) * m;  // all-gather / reduce-scatter; all-reduce is 2r
  const double n = b * s * h, loss = 3 * b * s * 2 * r;
  const bool llama = family == "llama";
  Traffic f;
  const double once = 2.0 * (tp - 1.0) / tp;  // an all-reduce's bus bytes per payload byte
  // gpt2: weight and bias of ln_1, ln_2 and ln_f, and the two row layers' biases per
  // block; llama: the weight of two norms per block and the final one.
  const double replicated = llama ? 2 * h * layers + h : (4 + 2) * h * layers + 2 * h;
  f.data_plugin = (sizeof(double) + (sequence_parallel ? replicated * sizeof(float) : 0.0)) * once;
  if (!sequence_parallel) {
    // Korthikanti et al. 2022, section 4.2.2: 2 all-reduces of b*s*h forward (attention
    // and MLP outputs), 2 backward (their inputs' gradients; llama's q/k/v and gate/up
    // are fused, so once each). Vocabulary split: the embedding's partial vectors, the
    // head's input gradient, the loss's three numbers per token. Replicated: llama's
    // column-parallel lm_head all-reduces its input's gradient and all-gathers the logits.
    f.per_block = 4 * n * 2 * r;
    f.around = vocab_parallel ? 2 * n * 2 * r + loss : llama ? n * 2 * r + b * s * V * r : 0.0;
    return f;
  }
  // Each all-reduce becomes an all-gather and a reduce-scatter (the same volume); column
  // layers keep only their part of the input, so backward gathers it again (as
  // Megatron-LM does). The sequence split's gradient is gathered; the head gathers the
  // sequence: as a column layer (vocabulary slices, or llama's lm_head) it re-gathers and
  // reduce-scatters too. Vocabulary split: the embedding's all-reduce and the loss.
  f.per_block = 8 * n * r + 2 * n * r;
  const bool column_head = vocab_parallel || llama;
  f.around = n * r + (column_head ? 3 * n * r : n * r) +
             (vocab_parallel ? n * 2 * r + loss : llama ? b * s * V * r : 0.0);
  return f;
}

void expect_traffic(bool sequence_parallel) {
  for (const std::string family : {"gpt2", "llama"}) {
    for (const bool vocab_parallel : {false, true}) {
      for (int tp : {2, 4}) {
        TempDir dir;
        std::vector<std::string> sets = {"parallel.tensor=megatron", concat("parallel.tp=", tp), "parallel.dp=1",
                                         "parallel.data=single", "train.grad_accum=2", concat("model.family=", family),
                                         concat("megatron.vocab_parallel=", vocab_parallel ? "true" : "false"),
                                         concat("megatron.sequence_parallel=", sequence_parallel ? "true" : "false")};
        if (family == "llama") sets.push_back("model.n_kv_head=4");  // 4 heads split over tp 4
        ProcessResult r = run_quickstart(dir / "run", 2, sets);
        INFO(r.output);
        REQUIRE(r.exit_code == 0);
        const Traffic f = traffic_formula(family, tp, vocab_parallel, sequence_parallel);
        for (const auto& step : read_metrics(dir / "run")) {
          const double measured = step["comm_bytes_by"]["megatron"].get<double>();
          INFO(family << ", vocab_parallel " << vocab_parallel << ", tp " << tp << ", step " << step["step"] << ": "
                      << (measured - f.around) / 2 << " bus bytes per block, formula " << f.per_block);
          CHECK(measured == Approx(2 * f.per_block + f.around).epsilon(0.001));
          CHECK(step["comm_bytes_by"]["single"].get<double>() == Approx(f.data_plugin).epsilon(0.001));
        }
      }
    }
  }
}

}  // namespace

// Each with and without sequence parallel. The tiny llama's 2 key/value heads do not
// split over 4 ranks (refused, below): at tp 4 it runs with 4 (plain multi-head).
#define MEGATRON_EQUIVALENCE(model, family, tp, dtype, ...)                                                       \
  TEST_CASE("megatron tp " #tp " on " model ", " dtype ", with and without sequence parallel, equals the single "  \
            "process",                                                                                              \
            "[megatron]") {                                                                                         \
    expect_equivalent(family, tp, dtype, {__VA_ARGS__});                                                            \
    expect_equivalent(family, tp, dtype, {__VA_ARGS__ __VA_OPT__(, ) "megatron.sequence_parallel=true"});           \
  }
MEGATRON_EQUIVALENCE("gpt2", "gpt2", 2, "float64")
MEGATRON_EQUIVALENCE("gpt2", "gpt2", 2, "float32")
MEGATRON_EQUIVALENCE("gpt2", "gpt2", 4, "float64")
MEGATRON_EQUIVALENCE("gpt2", "gpt2", 4, "float32")
MEGATRON_EQUIVALENCE("llama", "llama", 2, "float64")
MEGATRON_EQUIVALENCE("llama", "llama", 2, "float32")
MEGATRON_EQUIVALENCE("llama with 4 key/value heads", "llama", 4, "float64", "model.n_kv_head=4")
MEGATRON_EQUIVALENCE("llama with 4 key/value heads", "llama", 4, "float32", "model.n_kv_head=4")

// The vocabulary replicated (the head gathers the sequence, each rank's gradient whole),
// full activation checkpointing (the norms run again in backward), and fsdp sharding the
// norms' partial gradients before they are summed over tp.
TEST_CASE("megatron's sequence parallel equals the single process with the vocabulary replicated, with "
          "checkpointing, and under fsdp",
          "[megatron]") {
  expect_equivalent("gpt2", 2, "float64", {"megatron.sequence_parallel=true", "megatron.vocab_parallel=false"});
  expect_equivalent("llama", 2, "float64", {"megatron.sequence_parallel=true", "megatron.vocab_parallel=false"});
  expect_equivalent("gpt2", 2, "float64", {"megatron.sequence_parallel=true", "train.activation_checkpointing=full"});
  expect_equivalent("llama", 2, "float64",
                    {"megatron.sequence_parallel=true", "parallel.dp=2", "parallel.data=fsdp"});
}

// Dropout on the residual stream runs on each rank's part of the sequence; its masks are
// keyed on global positions, so the ranks together drop what the single process drops,
// also when checkpointing recomputes a block.
TEST_CASE("megatron with dropout, with and without sequence parallel, equals the single process", "[megatron]") {
  expect_equivalent("gpt2", 2, "float64", {"megatron.sequence_parallel=true", "model.dropout=0.1"});
  expect_equivalent("llama", 2, "float32",
                    {"megatron.sequence_parallel=true", "model.dropout=0.1", "train.activation_checkpointing=full"});
  // Without sequence parallel every tp rank drops the same elements of the whole sequence.
  expect_equivalent("gpt2", 4, "float32", {"model.dropout=0.1"});
}

TEST_CASE("megatron tp 2 under ddp dp 2 equals the single process", "[megatron]") {
  expect_equivalent("gpt2", 2, "float64", {"parallel.dp=2", "parallel.data=ddp"});
}
TEST_CASE("megatron tp 2 under zero stage 1 dp 2 equals the single process", "[megatron]") {
  expect_equivalent("gpt2", 2, "float64", {"parallel.dp=2", "parallel.data=zero", "zero.stage=1"});
}
TEST_CASE("megatron tp 2 under fsdp dp 2 equals the single process", "[megatron]") {
  expect_equivalent("llama", 2, "float64", {"parallel.dp=2", "parallel.data=fsdp"});
}

TEST_CASE("a tp degree that does not divide the key/value heads is refused, naming the layer", "[megatron]") {
  TempDir dir;
  ProcessResult r = run_plait({"run", source_path("configs/quickstart.toml"), "--steps", "1", "--out",
                               (dir / "run").string(), "--set", "model.family=llama", "--set", "parallel.data=single",
                               "--set", "parallel.dp=1", "--set", "parallel.tensor=megatron", "--set", "parallel.tp=4"});
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains("model.layers.0.self_attn: 4 attention heads and 2 key/value heads must both split "
                                "evenly over 4 tensor-parallel ranks"));
}

// Korthikanti et al. 2022 (section 4.2): tensor parallel alone leaves the norms' inputs
// and the column layers' inputs whole on every rank; sequence parallel splits those
// too, so a block's activations divide by t. Our blocks (no dropout, fp32) keep 16 sbh
// elements and the a s^2 b softmax: norms' inputs 2, column inputs 2 (replicated under
// tp alone), q k v 3, attention output 1, MLP hidden 4 + 4 (split).
TEST_CASE("sequence parallel divides a block's activations by t, tensor parallel alone keeps 4sbh whole",
          "[megatron]") {
  const double sbh = 64 * 8 * 64 * 4.0;  // quickstart: s 64, b 8, h 64, float32 bytes
  const double one = block_activation_bytes(1, false);
  INFO("one rank: " << one << " bytes per block (16sbh + 4as^2b = " << 16 * sbh + 4 * 64 * 64 * 8 * 4.0 << ")");
  for (int tp : {2, 4}) {
    const double tp_only = block_activation_bytes(tp, false), sp = block_activation_bytes(tp, true);
    INFO("tp " << tp << ": " << tp_only << " bytes per block, with sequence parallel " << sp);
    // 5%: what gloo's worker lets go of late in every step. Sequence parallel not
    // splitting, or tensor parallel splitting what it keeps whole, is off by 17% or more.
    CHECK(sp == Approx(one / tp).epsilon(0.05));
    CHECK(tp_only == Approx(4 * sbh + (one - 4 * sbh) / tp).epsilon(0.05));
  }
}

TEST_CASE("megatron's sequence parallel refuses a sequence that does not split, naming the key", "[megatron]") {
  TempDir dir;
  ProcessResult r = run_quickstart(dir / "run", 1,
                                  {"parallel.data=single", "parallel.dp=1", "parallel.tensor=megatron", "parallel.tp=4",
                                   "megatron.sequence_parallel=true", "data.seq_len=62"});
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains("megatron: sequence_parallel splits each sequence over the 4 tensor-parallel ranks, "
                                "but a batch holds 62 positions") &&
                           Contains("[data] seq_len"));
}

TEST_CASE("megatron's tensor-parallel traffic per block equals Megatron's formula, both families", "[megatron]") {
  expect_traffic(false);
}

TEST_CASE("megatron's sequence-parallel traffic per block equals the all-reduces it replaces plus the re-gathers",
          "[megatron]") {
  expect_traffic(true);
}

TEST_CASE("megatron with the vocabulary replicated (gathered logits) equals the single process", "[megatron]") {
  expect_equivalent("gpt2", 2, "float64", {"megatron.vocab_parallel=false"});
  expect_equivalent("llama", 2, "float32", {"megatron.vocab_parallel=false"});
}

TEST_CASE("megatron refuses a vocabulary that does not split, naming the embedding", "[megatron]") {
  TempDir dir;
  ProcessResult r = run_plait({"run", source_path("configs/quickstart.toml"), "--steps", "1", "--out",
                               (dir / "run").string(), "--set", "parallel.data=single", "--set", "parallel.dp=1",
                               "--set", "parallel.tensor=megatron", "--set", "parallel.tp=2", "--set",
                               "model.vocab_size=255"});
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains("megatron: transformer.wte has 255 rows, which do not split over 2 tensor-parallel ranks") &&
                           Contains("vocab_parallel = false"));
}
