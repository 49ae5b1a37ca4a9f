// The activation model against the executor's measurement: real one-step runs of the
// quickstart's models (GPT-2 and Llama, 2 blocks, s = 64, b = 8, h = 64, 4 heads,
// vocabulary 256) under
// each attention kernel, dropout, dtype, checkpointing mode and tensor-parallel layout,
// their activation_bytes (metrics.jsonl) against the prediction.
#include <cmath>

#include <catch2/catch.hpp>

#include "plait/sdk/error.hpp"
#include "pipeline/pipeline_plan.hpp"
#include "plan/activation_memory.hpp"
#include "plan/held_in_flight.hpp"
#include "run/prepare.hpp"
#include "support/test_support.hpp"
#include "support/token_files.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;

namespace {

struct Case {
  std::string family;
  std::string attention;
  double dropout;
  std::string dtype;
  std::string checkpointing;
  int64_t tp;
  bool sequence_parallel;
  int64_t kv_heads = 0;  // llama: 0 keeps the tiny size's 2 (grouped query); 4: one per head
  bool packed = false;   // [data] packing over a token file of documents
};

// Documents of 20 to 199 tokens (vocabulary 256) to pack into rows of 64.
std::string documents_file(const TempDir& dir) {
  PlaitTokens f;
  for (int d = 0; f.tokens.size() < 6000; ++d) {
    f.starts.push_back(static_cast<int64_t>(f.tokens.size()));
    for (int i = 0; i < 20 + (d * 37) % 180; ++i) {
      f.tokens.push_back(static_cast<uint16_t>((d * 31 + i * 7) % 256));
      f.mask.push_back(1);
    }
  }
  return write_plait_tokens(dir / "docs.bin", f).string();
}

ModelSpec quickstart_model(const Case& c) {
  ModelSpec m;
  for (const auto& named : named_sizes()) {
    if (named.spec.family == c.family && named.spec.size == "tiny") m = named.spec;
  }
  if (c.kv_heads > 0) m.n_kv_head = c.kv_heads;
  REQUIRE(m.n_layer == 2);
  m.attention = c.attention;
  m.dropout = c.dropout;
  return m;
}

int64_t measured(const Case& c) {
  TempDir dir;
  std::vector<std::string> sets = {"model.family=" + c.family, "parallel.data=single", "parallel.dp=1", concat("model.attention=", c.attention),
                                   concat("model.dropout=", c.dropout), "train.dtype=" + c.dtype,
                                   "train.activation_checkpointing=" + c.checkpointing, "checkpoint.final=false"};
  if (c.kv_heads > 0) sets.push_back(concat("model.n_kv_head=", c.kv_heads));
  if (c.packed) sets.insert(sets.end(), {"data.source=tokens", "data.path=" + documents_file(dir), "data.packing=true"});
  if (c.tp > 1) {
    sets.insert(sets.end(), {"parallel.tensor=megatron", concat("parallel.tp=", c.tp),
                             concat("megatron.sequence_parallel=", c.sequence_parallel ? "true" : "false")});
  }
  const ProcessResult r = run_quickstart(dir / "run", 1, sets);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return read_metrics(dir / "run").front().at("activation_bytes").get<int64_t>();
}

int64_t predicted(const Case& c) {
  RankShape q;
  q.model = quickstart_model(c);
  q.seq_len = 64;
  q.micro_batch = 8;
  q.activation_bytes_per_element = q.stat_bytes_per_element = c.dtype == "float64" ? 8 : 4;
  q.tp = c.tp;
  q.sequence_parallel = c.sequence_parallel;
  q.checkpointing = c.checkpointing;
  q.packed = c.packed;
  return predict_activation_bytes(q).total(q.model.n_layer);
}

}  // namespace

TEST_CASE("predicted activation bytes equal a run's within 0.5%, for each kernel, dropout, dtype, checkpointing and tp layout",
          "[plan]") {
  const std::vector<Case> cases = {
      {"gpt2", "sdpa", 0.0, "float32", "none", 1, false},       {"gpt2", "sdpa", 0.1, "float64", "none", 1, false},
      {"gpt2", "math", 0.1, "float32", "none", 1, false},       {"gpt2", "math", 0.1, "float32", "selective", 1, false},
      {"gpt2", "sdpa", 0.1, "float32", "full", 1, false},       {"gpt2", "sdpa", 0.1, "float32", "none", 2, false},
      {"gpt2", "math", 0.0, "float32", "none", 2, true},        {"gpt2", "sdpa", 0.1, "float32", "selective", 2, true},
      {"llama", "sdpa", 0.0, "float32", "none", 1, false},      {"llama", "math", 0.1, "float64", "none", 1, false},
      {"llama", "sdpa", 0.0, "float32", "full", 1, false},      {"llama", "math", 0.0, "float32", "selective", 1, false},
      {"llama", "sdpa", 0.0, "float32", "none", 1, false, 4},   {"llama", "sdpa", 0.1, "float32", "none", 2, true},
      {"llama", "math", 0.0, "float32", "none", 2, false, 4},
      // Packed rows: the document mask and llama's gathered rotary rows, once per forward.
      {"gpt2", "sdpa", 0.0, "float32", "none", 1, false, 0, true},  {"gpt2", "math", 0.0, "float32", "none", 1, false, 0, true},
      {"gpt2", "sdpa", 0.0, "float64", "full", 1, false, 0, true},  {"gpt2", "math", 0.0, "float32", "selective", 1, false, 0, true},
      {"llama", "sdpa", 0.0, "float32", "none", 1, false, 0, true}, {"llama", "sdpa", 0.0, "float32", "selective", 1, false, 0, true},
      {"llama", "math", 0.0, "float32", "full", 1, false, 0, true}, {"gpt2", "sdpa", 0.0, "float32", "none", 2, true, 0, true},
      {"llama", "sdpa", 0.0, "float32", "none", 2, true, 0, true},
  };
  for (const Case& c : cases) {
    const int64_t want = measured(c), got = predicted(c);
    INFO(c.family << " " << c.attention << " kv heads " << c.kv_heads << " dropout " << c.dropout << " " << c.dtype << " checkpointing " << c.checkpointing << " tp "
                     << c.tp << (c.sequence_parallel ? " with sp" : "") << (c.packed ? ", packed" : "") << ": predicted " << got << ", measured " << want);
    // Under tensor parallelism a collective's input may outlive its wait() by a moment: gloo's
    // worker thread drops its hold on the finished work only after waking the waiter, and on
    // a loaded machine (CI's tests side by side) the next allocations can come first. The
    // measured peak may then hold one more b x s x h activation (seen: 131072 bytes more,
    // tp 2 with sequence parallel); never less than the model, and nothing else more.
    const double late = c.tp > 1 ? 8.0 * 64 * 64 * (c.dtype == "float64" ? 8 : 4) : 0.0;
    const double over = static_cast<double>(want - got), tolerance = 0.005 * static_cast<double>(want);
    CHECK(over >= -tolerance);
    CHECK(over <= tolerance + late);
  }
}

TEST_CASE("the activation model refuses a family it does not model, naming it", "[plan]") {
  RankShape q;
  q.model.family = "mamba";
  CHECK_THROWS_WITH(predict_activation_bytes(q), Contains("the activation model knows gpt2 and llama blocks, not mamba"));
}

TEST_CASE("a pipeline rank's predicted peak is what its schedule keeps in flight, as measured: 1f1b, gpipe, interleaved",
          "[plan]") {
  for (const std::string schedule : {"1f1b", "gpipe", "interleaved-1f1b"}) {
    const std::vector<std::string> sets = {"parallel.data=single", "parallel.dp=1", "parallel.pipeline=" + schedule,
                                           "parallel.pp=2", "train.grad_accum=4", "model.n_layer=4",
                                           "checkpoint.final=false"};
    TempDir dir;
    const ProcessResult r = run_quickstart(dir / "run", 1, sets);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const nlohmann::json ranks = read_metrics(dir / "run").front().at("ranks");
    const PipelinePlan pipeline = prepare_run(source_path("configs/quickstart.toml"), sets).pipeline;
    RankShape q;
    q.model = quickstart_model({"gpt2", "sdpa", 0.0, "float32", "none", 1, false});
    q.model.n_layer = 4;
    q.seq_len = 64;
    q.micro_batch = 8;
    const std::vector<int64_t> bytes = stage_activation_bytes(pipeline, predict_activation_bytes(q));
    for (const auto& rank : ranks) {
      const int64_t pp_rank = rank.at("rank").get<int64_t>();
      const int64_t measured = rank.at("activation_bytes").get<int64_t>();
      const int64_t predicted = peak_held_bytes(pipeline.schedule.ranks.at(static_cast<std::size_t>(pp_rank)), bytes);
      INFO(schedule << " rank " << pp_rank << ": predicted " << predicted << ", measured " << measured);
      CHECK(std::abs(static_cast<double>(predicted - measured)) <= 0.005 * static_cast<double>(measured));
    }
  }
}
