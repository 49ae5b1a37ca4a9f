#include "plan/step_time.hpp"

#include <algorithm>

#include "plait/sdk/error.hpp"
#include "plan/step_gemms.hpp"

namespace plait {
namespace {

struct RankCost {
  double compute = 0, memory_bound = 0, tp_comm = 0, pp_comm = 0;
  double busy() const { return compute + memory_bound + tp_comm + pp_comm; }
};

double seconds(const Hardware& hw, Collective op, double bytes, const GroupPlacement& g, int64_t count) {
  return static_cast<double>(count) * collective_seconds(hw, op, bytes, g);
}

// A blocking collective waits for its group's slowest member: `syncs` of them spread over
// `compute` seconds of the rank's computation.
double skew_seconds(const Hardware& hw, double compute, int64_t syncs) {
  return syncs < 1 ? 0.0 : static_cast<double>(syncs) * hw.sync_skew_seconds(compute / static_cast<double>(syncs));
}

// A microbatch's hidden state on a rank, whole: what tensor parallel's collectives move.
double hidden_bytes(const RankShape& s) {
  return static_cast<double>(s.tokens() * s.model.n_embd * s.activation_bytes_per_element);
}

// Two neighbouring pipeline stages.
GroupPlacement stage_pair(const Hardware& hw, const StepLayout& l) { return {2, stages_share_node(hw, l) ? 2 : 1}; }

// Tensor parallel's collectives in a block's forward, backward and recomputation: the
// two all-reduces of the hidden state each way (under sequence parallel an all-gather
// before and a reduce-scatter after each half), and the forward's again under full
// recomputation.
int64_t block_tp_passes(const RankShape& s) { return s.checkpointing == "full" ? 3 : 2; }

double block_tp_seconds(const Hardware& hw, const StepLayout& l) {
  const RankShape& s = l.rank;
  const GroupPlacement tp = tensor_group(hw, l);
  const double bytes = hidden_bytes(s);
  const int64_t passes = block_tp_passes(s);
  if (!s.sequence_parallel) return seconds(hw, Collective::all_reduce, bytes, tp, 2 * passes);
  return seconds(hw, Collective::all_gather, bytes, tp, 2 * passes) +
         seconds(hw, Collective::reduce_scatter, bytes, tp, 2 * passes);
}

// The vocab-parallel ends: the embedding's sum over the slices, and the loss's three
// sums of a float per token (the maximum, the exponentials' sum, the target's logit).
double end_tp_seconds(const Hardware& hw, const StepLayout& l, bool first, bool last) {
  const RankShape& s = l.rank;
  if (s.tp == 1 || !s.vocab_parallel) return 0;
  const GroupPlacement tp = tensor_group(hw, l);
  double t = 0;
  if (first) {
    t += seconds(hw, s.sequence_parallel ? Collective::reduce_scatter : Collective::all_reduce, hidden_bytes(s), tp, 1);
  }
  if (last) t += seconds(hw, Collective::all_reduce, static_cast<double>(s.tokens() * 4), tp, 3);
  return t;
}

// Tensor parallel's collectives in a microbatch on a rank, each a point where its group
// waits for the slowest member (the ones above, counted).
int64_t tp_syncs(const StepLayout& l, int64_t blocks, bool first, bool last) {
  const RankShape& s = l.rank;
  if (s.tp == 1) return 0;
  int64_t n = blocks * 2 * block_tp_passes(s) * (s.sequence_parallel ? 2 : 1);
  if (s.vocab_parallel) n += (first ? 1 : 0) + (last ? 3 : 0);
  return n;
}

RankCost rank_cost(const Hardware& hw, const StepLayout& l, const KernelInventory& kernels, int64_t pp_rank) {
  const RankShape& s = l.rank;
  const bool first = pp_rank == 0, last = pp_rank == l.pp - 1;
  const int64_t blocks = l.blocks_on(pp_rank);
  RankCost c;
  c.compute = microbatch_gemm_seconds(hw, s, blocks, last);
  c.memory_bound = memory_bound_seconds(hw, kernels, s, blocks, last);
  c.tp_comm = static_cast<double>(blocks) * block_tp_seconds(hw, l) + end_tp_seconds(hw, l, first, last) +
              skew_seconds(hw, c.compute + c.memory_bound, tp_syncs(l, blocks, first, last));
  if (l.pp > 1) {
    // Each virtual stage receives a microbatch's activations and sends its gradient back.
    const double part = hidden_bytes(s) / static_cast<double>(s.sequence_parallel ? s.tp : 1);
    c.pp_comm = seconds(hw, Collective::send, part, stage_pair(hw, l), 2 * l.virtual_stages);
  }
  const double m = static_cast<double>(l.microbatches);
  return {c.compute * m, c.memory_bound * m, c.tp_comm * m, c.pp_comm * m};
}

// One microbatch pass's share of the data plugin's collectives, on one stream in the
// order the plugin lists them (the order it issues them). A gather that overlaps the pass
// is prefetched: ready when the pass starts. A gradient reduction is ready once the
// backward has produced its bytes' share of the pass's reductions, so the last one waits
// for the backward's end (ddp's single bucket all of it). While the pass computes, the
// machine's `comm_overlap` share of a collective hides and the rest slows the computation;
// what runs past the pass's end shows as waiting.
struct PassComm {
  std::vector<std::pair<const CommOp*, double>> ops;  // each with one issue's seconds
  double reduced_bytes = 0;                           // the pass's gradient reductions
};

// What of the data plugin's collectives runs beside the computation without hiding (the
// machine's 1 - comm_overlap of that time: the cores or SMs it takes from the computation,
// which a run measures as slower computation), and what shows after it.
struct DataCommTime {
  double beside = 0, after = 0;
};

DataCommTime pass_exposed(const Hardware& hw, const PassComm& pass, double window) {
  double free_at = 0, reduced = 0;
  DataCommTime t;
  for (const auto& [op, seconds_each] : pass.ops) {
    double ready = 0;
    if (op->op != Collective::all_gather && pass.reduced_bytes > 0) {
      reduced += op->bytes;
      ready = window * reduced / pass.reduced_bytes;
    }
    const double start = std::max(ready, free_at);
    free_at = start + seconds_each;
    t.beside += (1 - hw.comm_overlap) * std::max(0.0, std::min(free_at, window) - start);
  }
  t.after = std::max(0.0, free_at - window);
  return t;
}

// The data plugin's collectives. One that overlaps a pass runs in the microbatches it is
// issued in (once a step: the last microbatch's; more often: one issue per microbatch,
// from the last back); the rest are exposed whole.
DataCommTime data_seconds(const Hardware& hw, const StepLayout& l, const std::vector<CommOp>& ops,
                          double forward_per_mb, double backward_per_mb) {
  const GroupPlacement dp = data_group(hw, l);
  const auto m = static_cast<std::size_t>(l.microbatches);
  std::vector<PassComm> forwards(m), backwards(m);
  DataCommTime total;
  for (const CommOp& op : ops) {
    const double t = seconds(hw, op.op, op.bytes, op.group.size > 0 ? op.group : dp, op.count);
    if ((!op.overlaps_backward && !op.overlaps_forward) || op.count < 1) {
      total.after += t;
      continue;
    }
    std::vector<PassComm>& passes = op.overlaps_backward ? backwards : forwards;
    for (int64_t k = 0; k < op.count; ++k) {
      PassComm& pass = passes[m - 1 - static_cast<std::size_t>(k) % m];
      pass.ops.emplace_back(&op, t / static_cast<double>(op.count));
      if (op.op != Collective::all_gather) pass.reduced_bytes += op.bytes;
    }
  }
  for (std::size_t j = 0; j < m; ++j) {
    for (const DataCommTime& t : {pass_exposed(hw, forwards[j], forward_per_mb), pass_exposed(hw, backwards[j], backward_per_mb)}) {
      total.beside += t.beside;
      total.after += t.after;
    }
  }
  return total;
}

// Each of the data plugin's collectives in a step is a point where its group waits for
// the slowest member.
int64_t data_syncs(const StepLayout& l, const std::vector<CommOp>& ops) {
  int64_t n = 0;
  for (const CommOp& op : ops) n += op.count;
  return l.dp > 1 ? n : 0;
}

// GPT-2's head shares the embedding's weights: across a pipeline its two copies' gradients
// are summed between the first and the last stage.
double tied_embedding_seconds(const Hardware& hw, const StepLayout& l) {
  const RankShape& s = l.rank;
  if (l.pp == 1 || s.model.family != "gpt2") return 0;
  const double bytes = static_cast<double>(s.model.vocab_size * s.model.n_embd / s.tp * l.grad_bytes_per_element);
  return collective_seconds(hw, Collective::all_reduce, bytes, stage_pair(hw, l));
}

}  // namespace

int64_t StepLayout::blocks_on(int64_t pp_rank) const {
  return rank_blocks.empty() ? rank.model.n_layer / pp : rank_blocks.at(static_cast<std::size_t>(pp_rank));
}

GroupPlacement tensor_group(const Hardware& hw, const StepLayout& l) {
  return {l.rank.tp, std::min(l.rank.tp, hw.gpus_per_node)};
}

GroupPlacement data_group(const Hardware& hw, const StepLayout& l) {
  const int64_t room = std::max<int64_t>(1, hw.gpus_per_node / l.rank.tp);  // data-parallel ranks per node
  return {l.dp, std::min(l.dp, room)};
}

bool stages_share_node(const Hardware& hw, const StepLayout& l) { return l.gpus() <= hw.gpus_per_node; }

StepPhases predict_step_time(const Hardware& hw, const StepLayout& l, const KernelInventory& kernels,
                             const std::vector<CommOp>& data_ops, const OptimizerBytes& optimizer) {
  const RankShape& s = l.rank;
  PLAIT_CHECK(l.pp >= 1 && l.dp >= 1 && l.virtual_stages >= 1 && l.microbatches >= 1 && s.micro_batch >= 1,
              concat("a layout of dp ", l.dp, ", pp ", l.pp, ", ", l.virtual_stages, " virtual stages and ",
                     l.microbatches, " microbatches of ", s.micro_batch),
              "each is at least 1");
  PLAIT_CHECK(!l.rank_blocks.empty() || s.model.n_layer % (l.pp * l.virtual_stages) == 0,
              concat(s.model.n_layer, " blocks do not split into pp ", l.pp, " x ", l.virtual_stages, " virtual stages"),
              "choose pp and virtual stages whose product divides the blocks, or give [parallel] stage_blocks");
  PLAIT_CHECK(l.rank_blocks.empty() || static_cast<int64_t>(l.rank_blocks.size()) == l.pp,
              concat("blocks given for ", l.rank_blocks.size(), " pipeline ranks of pp ", l.pp), "one count per pipeline rank");
  PLAIT_CHECK(l.idle_share >= 0 && l.idle_share < 1, concat("an idle share of ", l.idle_share), "it is a fraction below 1");
  // The busiest rank sets the pace: the last stage's head, the first's embedding, or
  // (stages cut unevenly) a middle rank with more blocks.
  const RankCost first = rank_cost(hw, l, kernels, 0);
  RankCost busiest = first, typical = first;
  std::vector<int64_t> middles;  // a middle rank's cost is its blocks': one of each count is priced
  for (int64_t r = 1; r < l.pp; ++r) {
    const bool middle = r < l.pp - 1;
    if (middle && std::find(middles.begin(), middles.end(), l.blocks_on(r)) != middles.end()) continue;
    if (middle) middles.push_back(l.blocks_on(r));
    const RankCost c = rank_cost(hw, l, kernels, r);
    if (c.busy() >= busiest.busy()) busiest = c;
    if (middle && (middles.size() == 1 || c.busy() > typical.busy())) typical = c;  // the busiest headless rank
  }
  StepPhases p;
  p.compute = busiest.compute;
  p.memory_bound = busiest.memory_bound;
  p.tp_comm = busiest.tp_comm;
  p.pp_comm = busiest.pp_comm + tied_embedding_seconds(hw, l);
  // The schedule idles its share of the makespan on a typical (headless) rank: the
  // busiest of them, whose pace the others wait for.
  p.bubble = typical.busy() * l.idle_share / (1 - l.idle_share);
  const double per_mb = busiest.compute / static_cast<double>(l.microbatches);
  const DataCommTime data = data_seconds(hw, l, data_ops, per_mb / 3.0, per_mb * 2.0 / 3.0);
  p.dp_comm_beside = data.beside;
  p.dp_comm = data.after + skew_seconds(hw, busiest.compute + busiest.memory_bound, data_syncs(l, data_ops));
  // The core's own sum each step (the loss over the world, for the metrics).
  p.core_comm = collective_seconds(hw, Collective::all_reduce, 8.0, {l.gpus(), std::min(l.gpus(), hw.gpus_per_node)});
  p.optimizer = hw.adam_gbps ? optimizer.state / (*hw.adam_gbps * 1e9)
                             : optimizer.moved / (hw.memory_gbps * 1e9 * hw.memory_efficiency);
  return p;
}

}  // namespace plait
