#pragma once
// What a plugin may check before any rank starts: the run as the config resolves it.
// The core calls Plugin::check() on every chosen plugin while it validates the config
// (`plait run`, `plait check` and `plait config validate` alike), so a shape the plugin
// cannot serve (heads that do not divide over its ranks, say) is refused with the
// user's config line before a run folder exists, instead of failing on every rank.
//
// Every table's where(key) names the line (or --set flag, or default) a value came from;
// the model's dimensions that a named size fills in point at its `size` line.
#include "plait/sdk/options.hpp"
#include "plait/sdk/version.hpp"

namespace plait {

class Offload;  // offload.hpp

// The plugin's own table is its context's (Plugin::options()).
struct PLAIT_ABI_GROWS RunCheck {
  // Every model dimension: family, n_layer, n_head, n_kv_head, n_embd, ffn_hidden,
  // vocab_size, block_size (int64 but family).
  const Options* model = nullptr;
  // [parallel], with the mesh degrees dp, pp and tp resolved (no -1).
  const Options* parallel = nullptr;
  // [data], with seq_len resolved (the model's block_size when unset).
  const Options* data = nullptr;
  const Options* train = nullptr;
  // The chosen offload plugin, configured (what it offloads: Offload::offloads), or null.
  const Offload* offload = nullptr;
};

}  // namespace plait
