#pragma once
// `plait verify --combos N`: random valid combinations of the mesh, the training options,
// the other kinds' plugins and the plugin's own options, each checked for equivalence,
// and a failure shrunk to the fewest overrides that still fail (Megatron-LM's users
// found silent numerical bugs only by fuzzing combinations of parallel modes).
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "loader/plugin_registry.hpp"
#include "verify/verify_run.hpp"

namespace plait::verify {

using Overrides = std::vector<std::string>;

class CombinationSampler {
 public:
  CombinationSampler(const PluginRecord& plugin, uint64_t seed);
  // A combination: the plugin in its role, then one override per drawn dimension.
  // It may still be one the config checks refuse; the caller draws again.
  Overrides next();

 private:
  template <class T>
  const T& pick(const std::vector<T>& choices);
  void mesh(Overrides& out);
  void training(Overrides& out);
  void own_options(Overrides& out);

  const PluginRecord& plugin_;
  std::mt19937_64 rng_;
};

// The smallest sublist of `failing` (its first entry, the plugin's role, always kept)
// for which `still_fails` holds: each other override is dropped in turn while the rest
// still fail (a greedy one-minimal shrink, as delta debugging ends).
Overrides shrink(const Overrides& failing, const std::function<bool(const Overrides&)>& still_fails);

// Draws `count` valid combinations (an invalid draw, refused by `plait config validate`,
// is drawn again), checks each for equivalence (an approximate plugin: for its loss gap
// to ddp), shrinks each failure, and returns a row per failure and one summary row.
// `fixed` (the user's --set) goes into every combination and is never shrunk away.
// `show` prints rows as they come.
std::vector<Outcome> check_combinations(const PluginRecord& plugin, const Workspace& ws, int64_t count, uint64_t seed,
                                        const Overrides& fixed, const std::function<void(const Outcome&)>& show);

}  // namespace plait::verify
