#include "pipeline/stage_partition.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

#include "plait/sdk/error.hpp"

namespace plait {

std::vector<int64_t> balance_blocks(const std::vector<int64_t>& block_params, int64_t stages) {
  const auto n = static_cast<int64_t>(block_params.size());
  PLAIT_CHECK(stages >= 1 && stages <= n,
              concat("cannot cut ", n, " blocks into ", stages, " pipeline stages of at least one block each"),
              "lower pp (or the interleaved schedule's virtual_stages), or use a model with more layers");
  std::vector<int64_t> prefix(static_cast<std::size_t>(n) + 1, 0);
  for (int64_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + block_params[static_cast<std::size_t>(i)];
  // best[k][i]: the smallest possible largest stage when the last i blocks form k stages.
  // Built from the back so that, among equal optima, later stages take more blocks.
  const int64_t inf = std::numeric_limits<int64_t>::max();
  std::vector<std::vector<int64_t>> best(static_cast<std::size_t>(stages) + 1,
                                         std::vector<int64_t>(static_cast<std::size_t>(n) + 1, inf));
  std::vector<std::vector<int64_t>> take(best.size(), std::vector<int64_t>(static_cast<std::size_t>(n) + 1, 0));
  best[0][0] = 0;
  for (int64_t k = 1; k <= stages; ++k) {
    for (int64_t i = k; i <= n; ++i) {
      // The first of these k stages takes j blocks from position n - i.
      for (int64_t j = 1; j <= i - (k - 1); ++j) {
        const int64_t rest = best[k - 1][i - j];
        if (rest == inf) continue;
        const int64_t first = prefix[n - i + j] - prefix[n - i];
        const int64_t worst = std::max(first, rest);
        if (worst < best[k][i]) {  // strict: the smallest first run wins ties
          best[k][i] = worst;
          take[k][i] = j;
        }
      }
    }
  }
  std::vector<int64_t> counts;
  for (int64_t k = stages, i = n; k >= 1; --k) {
    counts.push_back(take[k][i]);
    i -= take[k][i];
  }
  return counts;
}

StagePartition partition_stages(const StageModel& model, int64_t stages, const std::vector<int64_t>& blocks_per_stage,
                                const std::string& where) {
  std::vector<std::size_t> blocks;
  std::vector<int64_t> block_params;
  for (std::size_t u = 0; u < model.units.size(); ++u) {
    if (model.units[u].kind != UnitKind::block) continue;
    blocks.push_back(u);
    int64_t count = 0;
    for (const auto& p : model.units[u].unit->parameters()) count += p.numel();
    block_params.push_back(count);
  }
  std::vector<int64_t> counts = blocks_per_stage;
  if (counts.empty()) {
    counts = balance_blocks(block_params, stages);
  } else {
    PLAIT_CHECK(static_cast<int64_t>(counts.size()) == stages,
                concat(where, " has ", counts.size(), " entries but the pipeline has ", stages, " virtual stages"),
                "give one block count per virtual stage (pp x the schedule's virtual stages), or leave it empty");
    PLAIT_CHECK(std::all_of(counts.begin(), counts.end(), [](int64_t c) { return c >= 1; }),
                concat(where, " gives a stage no blocks"), "every stage takes at least one block");
    const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
    PLAIT_CHECK(total == static_cast<int64_t>(blocks.size()),
                concat(where, " sums to ", total, " blocks but the model has ", blocks.size()),
                "make the counts add up to [model] n_layer");
  }
  StagePartition out;
  out.units_of.resize(static_cast<std::size_t>(stages));
  std::size_t next_block = 0;
  for (int64_t s = 0; s < stages; ++s) {
    auto& units = out.units_of[static_cast<std::size_t>(s)];
    for (int64_t b = 0; b < counts[static_cast<std::size_t>(s)]; ++b) units.push_back(blocks[next_block++]);
  }
  // Units before the first block (embedding) join stage 0; after the last (head), the last stage.
  for (std::size_t u = 0; u < model.units.size(); ++u) {
    if (model.units[u].kind == UnitKind::block) continue;
    auto& stage = u < blocks.front() ? out.units_of.front() : out.units_of.back();
    stage.push_back(u);
    std::sort(stage.begin(), stage.end());
  }
  return out;
}

RankStages rank_stages(const StageModel& whole, const StagePartition& partition, int64_t pp, int64_t pp_rank) {
  RankStages out;
  for (int64_t s = pp_rank; s < partition.stages(); s += pp) {
    auto& indices = out.units_of[s];
    for (std::size_t u : partition.units_of[static_cast<std::size_t>(s)]) {
      indices.push_back(out.model.units.size());
      out.model.units.push_back(whole.units[u]);
    }
  }
  return out;
}

std::vector<bool> units_to_materialise(const StageModel& whole, const StagePartition& partition, int64_t pp,
                                       int64_t pp_rank) {
  std::map<std::string, std::size_t> owner;  // parameter name -> unit
  for (std::size_t u = 0; u < whole.units.size(); ++u) {
    for (const auto& p : whole.units[u].unit->named_parameters()) owner[whole.units[u].prefix + p.key()] = u;
  }
  std::vector<bool> out(whole.units.size(), false);
  for (int64_t s = pp_rank; s < partition.stages(); s += pp) {
    for (std::size_t u : partition.units_of[static_cast<std::size_t>(s)]) {
      out[u] = true;
      for (const auto& name : whole.units[u].borrowed) {
        auto it = owner.find(name);
        PLAIT_CHECK(it != owner.end(), concat("unit ", whole.units[u].prefix, " borrows ", name, ", which no unit owns"), "");
        out[it->second] = true;
      }
    }
  }
  return out;
}

}  // namespace plait
