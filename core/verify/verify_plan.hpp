#pragma once
// What `plait verify` runs for one plugin: the cases of its kind (equivalence with the
// single-process run, composed with the other kinds), exact resume and resharding when
// it claims checkpoints, and a refusal before launch for each capability it does not
// claim. Each case is a set of overrides on one small base config, so every case can be
// rerun by hand with `plait check` or `plait run`.
#include <string>
#include <vector>

#include "loader/plugin_registry.hpp"

namespace plait::verify {

enum class CaseKind {
  equivalence,  // `plait check`: losses and every gradient as the single process
  resume,       // N steps, or N/2 and N/2 more from the checkpoint: bit for bit
  reshard,      // saved under one strategy, resumed under another: within tolerance
  refused,      // `plait config validate` refuses it, naming `expect`
  host_reads,   // one read per step, with every wait for the device counted
  state_bytes,  // the state bytes each rank reports against its allocator's
  traffic,      // every byte on the wire sent inside the core's counted operations
  loss_gap,     // an approximate plugin against ddp over a longer run: final loss and bytes a step
};

struct Case {
  std::string group;  // "equivalence", "checkpoint", "capabilities", "honesty"
  std::string title;  // "dp 2, gpt2, float64, accumulation 2, clipping"
  CaseKind kind = CaseKind::equivalence;
  std::vector<std::string> sets;   // on top of the base config ("table.key=value")
  std::vector<std::string> other;  // reshard: the other side's overrides
  std::string expect;              // refused: what the refusal must say
  int steps = 4;                   // resume: steps of the whole run (half of them before the checkpoint)
  bool approximate = false;        // reshard: judged by the loss gap allowed, not float64's tolerance
  double tolerance = 0.0;          // equivalence: plait check --tolerance (0: its dtype's default)
};

// Steps of a loss-gap run: long enough for local steps and compression to show.
inline constexpr int kLossGapSteps = 100;

// `sets` with ddp in the data plugin's place, without the plugin's own options.
std::vector<std::string> with_ddp(const std::vector<std::string>& sets, const std::string& plugin);

// The base every case starts from: a tiny model, 4 steps, clipping on.
std::string base_config_toml();

// The cases for `plugin`; `quick` keeps one or two of each group. `sets` (the user's
// --set: the plugin's options, say) go into every case, right after choosing the plugin.
std::vector<Case> plan_cases(const PluginRecord& plugin, bool quick, const std::vector<std::string>& sets = {});

}  // namespace plait::verify
