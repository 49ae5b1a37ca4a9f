#include "run/prepare.hpp"

#include "data/make_sampler.hpp"
#include "plait/sdk/error.hpp"
#include "run/compatibility.hpp"
#include "runtime/torch_info.hpp"

namespace plait {

PluginRegistry discover_plugins(const std::vector<SearchDir>& extra) {
  return PluginRegistry::discover(default_search_dirs(extra), host_abi());
}

PreparedRun prepare_run(const std::string& config_path, const std::vector<std::string>& overrides) {
  PreparedRun run;
  run.loaded = load_config(config_path, overrides);
  run.registry = std::make_unique<PluginRegistry>(discover_plugins(config_plugin_dirs(run.loaded.tree)));
  run.registry->throw_if_refused();
  run.config = std::make_unique<ResolvedConfig>(resolve_config(run.loaded.tree, *run.registry));
  check_compatibility(*run.config, *run.registry);
  run.model = resolve_model_spec(run.config->table("model"));
  resolve_seq_len(run.config->table("data"), run.model);

  const Options& parallel = run.config->table("parallel");
  run.world_size = parallel.get<int64_t>("dp") * parallel.get<int64_t>("pp") * parallel.get<int64_t>("tp");
  PLAIT_CHECK(run.world_size == 1,
              concat("[parallel] dp x pp x tp = ", run.world_size, ", but this plait build runs one process"),
              "set dp = pp = tp = 1; multi-process runs need the launcher of a later plait version");
  return run;
}

}  // namespace plait
