// The core's pipeline pieces: stage partitioning (balanced and overridden), the schedule
// checker (each rule, and a hang found before launch), `plait schedule show`, the
// refusals at launch, and the measured activation memory of 1F1B against GPipe (the
// measured timeline of a step is test_trace.cpp's).
#include <catch2/catch.hpp>

#include <map>

#include <nlohmann/json.hpp>

#include "model/model_spec.hpp"
#include "model/model_zoo.hpp"
#include "pipeline/schedule_check.hpp"
#include "pipeline/schedule_plan.hpp"
#include "pipeline/stage_partition.hpp"
#include "plait/sdk/error.hpp"
#include "support/pipeline_support.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;
using A = ActionType;

namespace {

StageModel meta_model(const std::string& family, int64_t layers) {
  ModelSpec spec;
  for (const auto& s : named_sizes()) {
    if (s.spec.family == family && s.spec.size == "tiny") spec = s.spec;
  }
  spec.n_layer = layers;
  return build_meta_model(spec);
}

std::string refusal(const std::vector<std::vector<Action>>& ranks, const ScheduleSpec& spec) {
  try {
    check_schedule(ranks, spec, "test");
  } catch (const Error& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("blocks are balanced by parameter count", "[pipeline]") {
  CHECK(balance_blocks({5, 5, 5, 5}, 2) == std::vector<int64_t>{2, 2});
  CHECK(balance_blocks({5, 5, 5, 5, 5}, 2) == std::vector<int64_t>{2, 3});
  CHECK(balance_blocks({1, 1, 1, 1, 10}, 2) == std::vector<int64_t>{4, 1});
  CHECK(balance_blocks({10, 1, 1, 1, 1, 1}, 3) == std::vector<int64_t>{1, 2, 3});
  CHECK_THROWS_WITH(balance_blocks({1, 1}, 3), Contains("cannot cut 2 blocks into 3 pipeline stages"));
}

TEST_CASE("the embedding goes with the first stage, the head with the last", "[pipeline]") {
  const StageModel model = meta_model("gpt2", 4);  // units: embedding, 4 blocks, head
  const StagePartition p = partition_stages(model, 2, {});
  CHECK(p.units_of == std::vector<std::vector<std::size_t>>{{0, 1, 2}, {3, 4, 5}});
  const StagePartition manual = partition_stages(model, 2, {3, 1});
  CHECK(manual.units_of == std::vector<std::vector<std::size_t>>{{0, 1, 2, 3}, {4, 5}});
  // Interleaved placement: stage s on rank s % pp.
  const RankStages rank1 = rank_stages(meta_model("gpt2", 4), partition_stages(model, 4, {}), 2, 1);
  CHECK(rank1.units_of.size() == 2);
  CHECK(rank1.units_of.count(1) == 1);
  CHECK(rank1.units_of.count(3) == 1);
  CHECK(rank1.model.units.size() == 3);  // block 1, block 3, head
}

// No rank builds the whole model: each materialises its stages' units and what they
// borrow (gpt2's tied head reads the embedding's wte; llama's head is its own).
TEST_CASE("a pipeline rank materialises only its stages' units and the parameters they borrow", "[pipeline]") {
  const StagePartition two = partition_stages(meta_model("gpt2", 4), 2, {});  // {emb, b0, b1}, {b2, b3, head}
  CHECK(units_to_materialise(meta_model("gpt2", 4), two, 2, 0) == std::vector<bool>{1, 1, 1, 0, 0, 0});
  CHECK(units_to_materialise(meta_model("gpt2", 4), two, 2, 1) == std::vector<bool>{1, 0, 0, 1, 1, 1});
  CHECK(units_to_materialise(meta_model("llama", 4), partition_stages(meta_model("llama", 4), 2, {}), 2, 1) ==
        std::vector<bool>{0, 0, 0, 1, 1, 1});
  const StagePartition four = partition_stages(meta_model("gpt2", 4), 4, {});  // interleaved: stages 1, 3 on rank 1
  CHECK(units_to_materialise(meta_model("gpt2", 4), four, 2, 1) == std::vector<bool>{1, 0, 1, 0, 1, 1});
}

TEST_CASE("a wrong stage_blocks override is refused with what is wrong", "[pipeline]") {
  const StageModel model = meta_model("gpt2", 4);
  CHECK_THROWS_WITH(partition_stages(model, 2, {1, 1, 2}), Contains("has 3 entries but the pipeline has 2"));
  CHECK_THROWS_WITH(partition_stages(model, 2, {4, 0}), Contains("gives a stage no blocks"));
  CHECK_THROWS_WITH(partition_stages(model, 2, {2, 3}), Contains("sums to 5 blocks but the model has 4"));
}

TEST_CASE("the schedule checker refuses each broken rule, naming rank and action", "[pipeline]") {
  const ScheduleSpec spec{2, 1, 1};
  const std::vector<Action> good0 = {{A::forward, 0, 0}, {A::send_activation, 0, 0}, {A::recv_grad, 0, 0},
                                     {A::backward, 0, 0}};
  const std::vector<Action> good1 = {{A::recv_activation, 1, 0}, {A::forward, 1, 0}, {A::backward, 1, 0},
                                     {A::send_grad, 1, 0}};
  CHECK(refusal({good0, good1}, spec) == "accepted");
  CHECK_THAT(refusal({{good0[0], good0[1], good0[2]}, good1}, spec),
             Contains("rank 0: backward of stage 0 microbatch 0 is missing"));
  CHECK_THAT(refusal({{good0[2], good0[3], good0[0], good0[1]}, good1}, spec),
             Contains("rank 0: backward of stage 0 microbatch 0 comes before forward of stage 0 microbatch 0"));
  CHECK_THAT(refusal({good1, good0}, spec), Contains("rank 0: recv_activation of stage 1 microbatch 0: stage 1 lives on rank 1"));
  CHECK_THAT(refusal({{good0[0], good0[1], good0[1], good0[2], good0[3]}, good1}, spec), Contains("appears twice"));
  CHECK_THAT(refusal({{good0[0], good0[1], good0[2], good0[3], {A::weight_grad, 0, 0}}, good1}, spec),
             Contains("does not run split weight-gradient actions"));
  // Rank 0 sends its activation only after its backward, which waits for rank 1's
  // gradient, which waits for that activation.
  const std::vector<Action> hangs0 = {{A::forward, 0, 0}, {A::recv_grad, 0, 0}, {A::backward, 0, 0},
                                      {A::send_activation, 0, 0}};
  CHECK_THAT(refusal({hangs0, good1}, spec),
             Contains("wait for each other forever: rank 0 waits at backward of stage 0 microbatch 0; rank 1 waits at "
                      "forward of stage 1 microbatch 0"));
}

namespace {

// GPipe's lists on 2 ranks: every forward, then every backward; the last rank takes
// the microbatches' forwards in `order`.
std::vector<Action> gpipe_first(int64_t m) {
  std::vector<Action> out;
  for (int64_t i = 0; i < m; ++i) out.insert(out.end(), {{A::forward, 0, i}, {A::send_activation, 0, i}});
  for (int64_t i = 0; i < m; ++i) out.insert(out.end(), {{A::recv_grad, 0, i}, {A::backward, 0, i}});
  return out;
}
std::vector<Action> gpipe_last(const std::vector<int64_t>& order) {
  std::vector<Action> out;
  for (int64_t i : order) out.insert(out.end(), {{A::recv_activation, 1, i}, {A::forward, 1, i}});
  for (int64_t i : order) out.insert(out.end(), {{A::backward, 1, i}, {A::send_grad, 1, i}});
  return out;
}

}  // namespace

TEST_CASE("a schedule that gloo runs but NCCL would mismatch or deadlock is refused with the ranks and messages",
          "[pipeline]") {
  const ScheduleSpec spec{2, 1, 4};
  CHECK(refusal({gpipe_first(4), gpipe_last({0, 1, 2, 3})}, spec) == "accepted");
  // Rank 1 takes microbatch 1 before 0: gloo matches by tag, NCCL by order, so NCCL
  // would hand microbatch 0's activation to microbatch 1's receive.
  CHECK_THAT(refusal({gpipe_first(4), gpipe_last({1, 0, 2, 3})}, spec),
             Contains("pipeline schedule 'test' (pp 2, 1 virtual stages per rank, 4 microbatches): ranks 0 and 1 "
                      "would mismatch under NCCL: rank 0's message 1 to rank 1 is its send_activation of stage 0 "
                      "microbatch 0, but rank 1's receive 1 from rank 0 is its recv_activation of stage 1 microbatch 1"));
  // Rank 1 runs each microbatch's forward and backward in turn while rank 0 runs every
  // forward first: rank 0's third activation waits in its queue for a receive that
  // rank 1 posts with its first gradient, which waits for a receive that rank 0 queued
  // behind that activation.
  std::vector<Action> in_turn;
  for (int64_t i = 0; i < 4; ++i) {
    in_turn.insert(in_turn.end(),
                   {{A::recv_activation, 1, i}, {A::forward, 1, i}, {A::backward, 1, i}, {A::send_grad, 1, i}});
  }
  CHECK_THAT(refusal({gpipe_first(4), in_turn}, spec),
             Contains("under NCCL's point-to-point order the ranks would wait for each other forever: rank 0's "
                      "send_activation of stage 0 microbatch 2 to rank 1 waits for rank 1's recv_activation of stage 1 "
                      "microbatch 2 from rank 0, queued behind an earlier group of rank 1; rank 1's send_grad of "
                      "stage 1 microbatch 0 to rank 0 waits for rank 0's recv_grad of stage 0 microbatch 0 from rank "
                      "1, queued behind an earlier group of rank 0"));
}

TEST_CASE("every built-in schedule passes the NCCL order check on 2, 4 and 8 ranks", "[pipeline]") {
  for (const std::string schedule : {"gpipe", "1f1b", "interleaved-1f1b"}) {
    for (int pp : {2, 4, 8}) {
      for (int m : {8, 16}) {
        for (const std::string v : {"2", "4"}) {
          INFO(schedule << " pp " << pp << " m " << m << " v " << v);
          CHECK_NOTHROW(quickstart_schedule(schedule, pp, m,
                                            {"interleaved-1f1b.virtual_stages=" + v, "model.n_layer=" + std::to_string(pp * 4)}));
        }
      }
    }
  }
}

TEST_CASE("the sequential schedule runs each microbatch's forward then backward", "[pipeline]") {
  const SchedulePlan plan = plan_schedule(nullptr, "none", 1, 3);
  CHECK(plan.ranks.front().size() == 6);
  CHECK(plan.simulated.idle_fraction.front() == Approx(0.0));
  CHECK(plan.simulated.peak_in_flight.front() == 1);
  CHECK_THROWS_WITH(plan_schedule(nullptr, "none", 2, 3), Contains("[parallel] pp = 2 needs a pipeline schedule"));
}

TEST_CASE("plait schedule show draws each rank and writes a Chrome trace", "[pipeline]") {
  TempDir dir;
  ProcessResult r = run_plait({"schedule", "show", source_path("configs/quickstart.toml"), "--set",
                               "parallel.pipeline=1f1b", "--set", "parallel.pp=2", "--set", "parallel.dp=1", "--set",
                               "train.grad_accum=4", "--trace", (dir / "trace.json").string()});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("rank 0 |F0 |F1 |........B0=====|F2 |B1=====|F3 |B2=====|....B3=====|") &&
                           Contains("rank 1 |....F0 |B0=====|F1 |B1=====|F2 |B2=====|F3 |B3=====|........") &&
                           Contains("20.0%"));
  const auto trace = nlohmann::json::parse(read_file(dir / "trace.json"));
  int computes = 0;
  for (const auto& e : trace["traceEvents"]) computes += e["ph"] == "X";
  CHECK(computes == 2 * 2 * 4);  // 2 ranks x (forward + backward) x 4 microbatches
}

TEST_CASE("plait schedule show refuses a --trace it cannot write before it draws anything", "[pipeline]") {
  TempDir dir;
  const ProcessResult r = run_plait({"schedule", "show", source_path("configs/quickstart.toml"), "--set",
                                     "parallel.pipeline=1f1b", "--set", "parallel.pp=2", "--set", "parallel.dp=1",
                                     "--trace", dir.path().string()});
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("error: --trace " + dir.path().string() + ": it is a folder, not a file"));
  CHECK_THAT(r.output, !Contains("rank 0 |"));
}

TEST_CASE("a pipeline degree without a schedule, or too few blocks, is refused before launch", "[pipeline]") {
  TempDir dir;
  auto run = [&](std::vector<std::string> sets) {
    std::vector<std::string> args = {"run", source_path("configs/quickstart.toml"), "--out", (dir / "run").string()};
    for (const auto& s : sets) args.insert(args.end(), {"--set", s});
    return run_plait(args);
  };
  ProcessResult none = run({"parallel.pp=2", "parallel.dp=1"});
  CHECK(none.exit_code != 0);
  CHECK_THAT(none.output, Contains("[parallel] pp = 2 needs a pipeline schedule") && Contains("1f1b"));
  ProcessResult shallow = run({"parallel.pp=4", "parallel.dp=1", "parallel.pipeline=gpipe"});
  CHECK(shallow.exit_code != 0);
  CHECK_THAT(shallow.output, Contains("cannot cut 2 blocks into 4 pipeline stages"));
  ProcessResult blocks = run({"parallel.pp=2", "parallel.dp=1", "parallel.pipeline=gpipe", "parallel.stage_blocks=[2, 1]"});
  CHECK(blocks.exit_code != 0);
  CHECK_THAT(blocks.output, Contains("[parallel] stage_blocks sums to 3 blocks but the model has 2"));
  CHECK_FALSE(fs::exists(dir / "run" / "rank-0.log"));
}

// Bytes held by forwards awaiting their backward, measured by the tracking allocator:
// GPipe holds all m microbatches, 1F1B at most p - r on rank r, whatever m is.
TEST_CASE("1F1B's activation memory is bounded by p microbatches, GPipe's grows with m", "[pipeline]") {
  auto held = [](const std::string& schedule, int m) {
    TempDir dir;
    ProcessResult r = run_plait({"run", source_path("configs/quickstart.toml"), "--steps", "2", "--out",
                                 (dir / "run").string(), "--set", "parallel.pipeline=" + schedule, "--set",
                                 "parallel.pp=2", "--set", "parallel.dp=1", "--set", "model.n_layer=4", "--set",
                                 "train.grad_accum=" + std::to_string(m)});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const auto metrics = read_metrics(dir / "run");
    std::vector<int64_t> bytes;
    for (const auto& rank : metrics.back()["ranks"]) bytes.push_back(rank["activation_bytes"].get<int64_t>());
    return bytes;
  };
  const auto one_microbatch = held("gpipe", 1);
  const auto gpipe4 = held("gpipe", 4), gpipe8 = held("gpipe", 8), f1b4 = held("1f1b", 4), f1b8 = held("1f1b", 8);
  // Within 1%: a few hundred bytes of small tensors differ from build to build.
  auto near = [](int64_t measured, int64_t expected) { return std::abs(double(measured - expected)) < 0.01 * expected; };
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r << ": one microbatch holds " << one_microbatch[r] << "; gpipe m4 " << gpipe4[r] << ", m8 "
                 << gpipe8[r] << "; 1f1b m4 " << f1b4[r] << ", m8 " << f1b8[r]);
    CHECK(near(gpipe4[r], 4 * one_microbatch[r]));
    CHECK(near(gpipe8[r], 8 * one_microbatch[r]));
    CHECK(near(f1b4[r], (2 - r) * one_microbatch[r]));
    CHECK(near(f1b8[r], (2 - r) * one_microbatch[r]));
  }
}

