// The planner's step time against published runs: Megatron-LM's 2021 Table 1 on A100s,
// every row from 1.7B to 1T parameters within 10% of its published TFLOP/s per GPU, with
// one set of hardware figures (configs/hardware/a100-80g.toml) and the paper's kernels
// described once; the pipeline's idle share is the schedule plugins' own (1f1b,
// interleaved-1f1b). Then the model's parts: where the groups fall, what the backward hides.
#include <cmath>
#include <cstdio>
#include <map>

#include <catch2/catch.hpp>

#include "plait/sdk/error.hpp"
#include "plan/step_gemms.hpp"
#include "plan/step_time.hpp"
#include "support/megatron_table.hpp"
#include "support/pipeline_support.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;

namespace {

// Megatron-LM's kernels as of the paper, in fp16: apex's fused LayerNorm, the fused
// bias + dropout + residual add, the fused bias + GeLU, the fused scale + mask + softmax
// followed by the attention's dropout, and the vocab-parallel cross-entropy in float32.
// Bytes per element read and written; a backward reads the gradient and what it saved.
KernelInventory megatron_2021_kernels() {
  KernelInventory k;
  k.name = "Megatron-LM 2021 (fused kernels, fp16)";
  k.block = {{"layernorm 1", Extent::hidden, 4, 8},         {"scale mask softmax", Extent::scores, 4, 6, true},
             {"attention dropout", Extent::scores, 5, 5, true}, {"bias dropout add 1", Extent::hidden, 7, 5},
             {"layernorm 2", Extent::hidden, 4, 8},         {"bias gelu", Extent::ffn, 4, 6},
             {"bias dropout add 2", Extent::hidden, 7, 5}};
  k.head = {{"final layernorm", Extent::hidden, 4, 8}, {"cross entropy", Extent::logits, 14, 18}};
  return k;
}

double rank_params(const MegatronRow& r) {
  const double h = static_cast<double>(r.hidden);
  return (12 * h * h * static_cast<double>(r.layers / r.pp) + static_cast<double>(kMegatronVocab) * h) /
         static_cast<double>(r.tp);
}

struct Predicted {
  double tflops_per_gpu = 0;
  int64_t micro_batch = 0, virtual_stages = 0, microbatches = 0;
  StepPhases phases;
};

// The schedule's idle share, asked of its plugin: 1f1b with one stage per rank, else
// interleaved-1f1b (Megatron-LM's two).
double schedule_share(int64_t pp, int64_t v, int64_t m, int64_t layers) {
  static std::map<std::tuple<int64_t, int64_t, int64_t>, double> known;
  auto [it, added] = known.try_emplace({pp, v, m}, 0.0);
  if (added) {
    std::vector<std::string> sets = {concat("model.n_layer=", layers)};
    if (v > 1) sets.push_back(concat("interleaved-1f1b.virtual_stages=", v));
    const SchedulePlan plan = quickstart_schedule(v > 1 ? "interleaved-1f1b" : "1f1b", static_cast<int>(pp),
                                                  static_cast<int>(m), sets);
    REQUIRE(plan.ideal_idle_share.has_value());
    it->second = *plan.ideal_idle_share;
  }
  return it->second;
}

// The paper chose each row's microbatch size and virtual stages; the planner does the
// same: the fastest of microbatches of 1, 2, 4, 8 and the virtual stages the blocks allow.
Predicted predict_row(const Hardware& a100, const MegatronRow& r) {
  Predicted best;
  const int64_t per_pipeline = r.global_batch / r.dp();
  for (int64_t mb : {1, 2, 4, 8}) {
    if (per_pipeline % mb != 0) continue;
    const int64_t m = per_pipeline / mb;
    for (int64_t v = 1; v <= r.layers / r.pp; ++v) {
      if ((r.layers / r.pp) % v != 0 || (v > 1 && (r.pp == 1 || m % r.pp != 0))) continue;
      StepLayout l;
      l.rank = megatron_rank_shape(r, r.tp, "full", mb);
      l.dp = r.dp();
      l.pp = r.pp;
      l.virtual_stages = v;
      l.microbatches = m;
      l.idle_share = r.pp > 1 ? schedule_share(r.pp, v, m, r.layers) : 0.0;
      l.grad_bytes_per_element = 2;
      // Megatron's data parallel of 2021: the fp16 gradients all-reduced after the backward.
      const std::vector<CommOp> ops = {{"gradient all-reduce", Collective::all_reduce, 2 * rank_params(r), 1, false}};
      // Adam over fp32 master weights: reads them, m, v and the fp16 gradient; writes
      // them, m, v and the fp16 copy.
      const StepPhases p = predict_step_time(a100, l, megatron_2021_kernels(), ops, {28 * rank_params(r), 0});
      const double tflops = r.paper_flops() / (p.total() * static_cast<double>(r.gpus)) / 1e12;
      if (tflops > best.tflops_per_gpu) best = {tflops, mb, v, m, p};
    }
  }
  return best;
}

}  // namespace

TEST_CASE("every row of Megatron-LM's 2021 Table 1 is predicted within 10% of its published throughput", "[plan]") {
  const Hardware a100 = load_hardware("a100-80g");
  const std::vector<MegatronRow> rows = megatron_table1();
  REQUIRE(rows.size() == 10);
  std::printf("%s", "params  tp  pp  dp  mb  v    m  compute  kernels  tp-comm  pp-comm  bubble  dp-comm  optim  "
               "predicted  published  error\n");
  for (const MegatronRow& r : rows) {
    const Predicted p = predict_row(a100, r);
    const double error = p.tflops_per_gpu / r.tflops_per_gpu - 1;
    const StepPhases& s = p.phases;
    std::printf("%6.1f  %2lld  %2lld  %2lld  %2lld  %2lld  %3lld  %7.2f  %7.2f  %7.2f  %7.2f  %6.2f  %7.3f  %5.3f  %9.1f  %9.0f  %+5.1f%%\n",
                r.params_billion, static_cast<long long>(r.tp), static_cast<long long>(r.pp),
                static_cast<long long>(r.dp()), static_cast<long long>(p.micro_batch),
                static_cast<long long>(p.virtual_stages), static_cast<long long>(p.microbatches), s.compute,
                s.memory_bound, s.tp_comm, s.pp_comm, s.bubble, s.dp_comm, s.optimizer, p.tflops_per_gpu,
                r.tflops_per_gpu, 100 * error);
    INFO(r.params_billion << "B: predicted " << p.tflops_per_gpu << " TFLOP/s per GPU, published " << r.tflops_per_gpu);
    CHECK(std::abs(error) <= 0.10);
  }
}

TEST_CASE("groups fall on nodes tensor parallel first, then data parallel, then the stages", "[plan]") {
  const Hardware a100 = load_hardware("a100-80g");  // 8 per node
  StepLayout l;
  l.rank = megatron_rank_shape(megatron_table1().front(), 2);
  l.dp = 16;
  l.pp = 2;
  const GroupPlacement tp = tensor_group(a100, l), dp = data_group(a100, l);
  CHECK((tp.size == 2 && tp.per_node == 2));
  CHECK((dp.size == 16 && dp.per_node == 4));  // 4 data-parallel pairs per node
  CHECK_FALSE(stages_share_node(a100, l));
  l.dp = 2;
  CHECK(stages_share_node(a100, l));  // 2 x 2 x 2 = 8: one node
  CHECK(data_group(a100, l).per_node == 2);
}

TEST_CASE("a step's phases: no pipeline no bubble, and the backward hides what overlaps it", "[plan]") {
  const Hardware a100 = load_hardware("a100-80g");
  StepLayout l;
  l.rank = megatron_rank_shape(megatron_table1().front(), 1, "none", 1);
  l.dp = 32;
  l.microbatches = 4;
  const KernelInventory k = plait_kernels(l.rank);
  const StepPhases plain = predict_step_time(a100, l, k, {}, {});
  CHECK(plain.bubble == 0);
  CHECK(plain.pp_comm == 0);
  CHECK(plain.tp_comm == 0);
  CHECK(plain.compute == Approx(4 * microbatch_gemm_seconds(a100, l.rank, l.rank.model.n_layer, true)));
  // Gradient buckets are ready one after another as the backward produces them: each but
  // the last hides behind the rest of the backward, the last runs after it; one bucket
  // alone waits for the backward's end and costs as much as one issued after it.
  const double bytes = 1e8;
  const double alone = collective_seconds(a100, Collective::all_reduce, bytes, data_group(a100, l));
  const double tenth = collective_seconds(a100, Collective::all_reduce, bytes / 10, data_group(a100, l));
  REQUIRE(alone < plain.compute * 2 / 3 / 4 / 10);
  std::vector<CommOp> buckets(10, {"bucket", Collective::all_reduce, bytes / 10, 1, true});
  CHECK(predict_step_time(a100, l, k, buckets, {}).dp_comm == Approx(tenth));
  CHECK(predict_step_time(a100, l, k, {{"grads", Collective::all_reduce, bytes, 1, true}}, {}).dp_comm == Approx(alone));
  CHECK(predict_step_time(a100, l, k, {{"grads", Collective::all_reduce, bytes, 1, false}}, {}).dp_comm == Approx(alone));
  // Gathers prefetched under the forward are ready at its start and hide whole.
  CHECK(predict_step_time(a100, l, k, {{"gather", Collective::all_gather, bytes, 4, false, true}}, {}).dp_comm == 0);
  // A collective over a subgroup (a hybrid's) is priced over it as placed: 8 ranks within
  // a node take its links; 8 on 8 nodes, one ring through one NIC.
  const CommOp in_node{"shard", Collective::all_gather, bytes, 1, false, false, {8, 8}};
  CommOp across = in_node;
  across.group = {8, 1};
  CHECK(predict_step_time(a100, l, k, {in_node}, {}).dp_comm ==
        Approx(collective_seconds(a100, Collective::all_gather, bytes, {8, 8})));
  CHECK(predict_step_time(a100, l, k, {across}, {}).dp_comm ==
        Approx(collective_seconds(a100, Collective::all_gather, bytes, {8, 1})));
  CHECK(predict_step_time(a100, l, k, {across}, {}).dp_comm > 5 * predict_step_time(a100, l, k, {in_node}, {}).dp_comm);
  // On a machine whose computation hides only part of a collective (comm_overlap), the
  // rest of the nine buckets under the backward slows it, and the last still shows after it.
  CHECK(predict_step_time(a100, l, k, buckets, {}).dp_comm_beside == 0);
  Hardware shared = a100;
  shared.comm_overlap = 0.25;
  const StepPhases slowed = predict_step_time(shared, l, k, buckets, {});
  CHECK(slowed.dp_comm_beside == Approx(9 * 0.75 * tenth));
  CHECK(slowed.dp_comm == Approx(tenth));
  CHECK(slowed.total() - predict_step_time(a100, l, k, buckets, {}).total() == Approx(9 * 0.75 * tenth));
  // Pipelines idle their schedule's share on top of a stage's work.
  l.pp = 2;
  l.idle_share = 0.2;
  const StepPhases piped = predict_step_time(a100, l, k, {}, {});
  // Each of the 4 microbatches receives its activations and sends their gradient back once
  // per virtual stage, whole hidden states between the two stages; gpt2's tied embedding
  // adds one all-reduce of its gradient between the end stages.
  const double hidden = static_cast<double>(l.rank.tokens() * l.rank.model.n_embd * l.rank.activation_bytes_per_element);
  const GroupPlacement pair{2, stages_share_node(a100, l) ? 2 : 1};
  const double tied = l.rank.model.family == "gpt2"
                          ? collective_seconds(a100, Collective::all_reduce,
                                               static_cast<double>(l.rank.model.vocab_size * l.rank.model.n_embd * 4), pair)
                          : 0.0;
  CHECK(piped.pp_comm == Approx(4 * 2 * collective_seconds(a100, Collective::send, hidden, pair) + tied));
  // The bubble is the idle share of the makespan on top of a stage's busy time: a share of
  // 0.2 idles a quarter of it, 0.5 all of it, and none without an idle share.
  l.idle_share = 0.5;
  const double stage_busy = predict_step_time(a100, l, k, {}, {}).bubble;
  CHECK(piped.bubble == Approx(stage_busy / 4));
  CHECK(stage_busy <= piped.compute + piped.memory_bound + piped.tp_comm + piped.pp_comm - tied);
  CHECK(stage_busy >= 0.4 * (piped.compute + piped.memory_bound));  // a stage without the head does most of the work
  l.idle_share = 0.0;
  CHECK(predict_step_time(a100, l, k, {}, {}).bubble == 0.0);
  l.idle_share = 0.2;
  l.rank.model.n_layer = 23;
  CHECK_THROWS_WITH(predict_step_time(a100, l, k, {}, {}), Contains("23 blocks do not split into pp 2 x 1 virtual stages"));
}

TEST_CASE("a blocking collective waits for its group's slowest member: the skew grows as the root of the computation "
          "between synchronisations, and the core sums the loss once a step", "[plan]") {
  const Hardware a100 = load_hardware("a100-80g");
  StepLayout l;
  l.rank = megatron_rank_shape(megatron_table1().front(), 2, "none");  // tp 2, no sequence parallel
  l.dp = 4;
  const KernelInventory k = plait_kernels(l.rank);
  const std::vector<CommOp> grads = {{"grads", Collective::all_reduce, 1e8, 3, false}};
  const StepPhases even = predict_step_time(a100, l, k, grads, {});
  REQUIRE(a100.sync_skew_us_per_sqrt_ms == 0);  // an accelerator's kernels take as long on every rank
  Hardware cpu = a100;
  cpu.sync_skew_us_per_sqrt_ms = 300;
  CHECK(cpu.sync_skew_seconds(4e-3) == Approx(600e-6));  // 300 µs × √4
  CHECK(cpu.sync_skew_seconds(0) == 0);
  const StepPhases skewed = predict_step_time(cpu, l, k, grads, {});
  const double busy = even.compute + even.memory_bound;
  // Tensor parallel: two all-reduces in each block's forward and two in its backward, and
  // the vocab-parallel ends' four (the embedding's one, the loss's three).
  const int64_t tp_syncs = l.rank.model.n_layer * 4 + 4;
  CHECK(skewed.tp_comm - even.tp_comm ==
        Approx(static_cast<double>(tp_syncs) * cpu.sync_skew_seconds(busy / static_cast<double>(tp_syncs))));
  // The data plugin's: each issue.
  CHECK(skewed.dp_comm - even.dp_comm == Approx(3 * cpu.sync_skew_seconds(busy / 3)));
  CHECK(skewed.compute == even.compute);
  // The core's sum of the loss over the world: one small all-reduce's time.
  CHECK(even.core_comm == Approx(collective_seconds(a100, Collective::all_reduce, 8, {8, 8})));
  l.dp = 1;
  l.rank = megatron_rank_shape(megatron_table1().front(), 1, "none", 1);
  const StepPhases alone = predict_step_time(cpu, l, k, grads, {});
  CHECK(alone.core_comm == 0);
  CHECK(alone.dp_comm == 0);  // one data-parallel rank: nothing to wait for
}
