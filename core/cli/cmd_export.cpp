#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include <ATen/ATen.h>

#include "checkpoint/checkpoint_files.hpp"
#include "checkpoint/checkpoint_reader.hpp"
#include "checkpoint/state_parts.hpp"
#include "cli/commands.hpp"
#include "config/config_loader.hpp"
#include "config/resolve.hpp"
#include "debug/plugin_call.hpp"
#include "io/hf_weights.hpp"
#include "io/safetensors.hpp"
#include "loader/plugin_instance.hpp"
#include "model/adapted_layers.hpp"
#include "model/dense_layers.hpp"
#include "model/hf_format.hpp"
#include "model/model_zoo.hpp"
#include "plait/sdk/adapter.hpp"
#include "run/prepare.hpp"
#include "run/resume_check.hpp"
#include "output/run_folder.hpp"
#include "util/human_bytes.hpp"

namespace plait::cli {
namespace fs = std::filesystem;
namespace {

// The adapter the checkpoint's run trained ([parallel] adapter of its config.lock.toml),
// made from that run's own [<adapter>] table; none when it trained no adapter.
struct CheckpointAdapter {
  std::unique_ptr<PluginRegistry> registry;
  std::unique_ptr<ResolvedConfig> config;
  PluginInstance<Adapter> adapter;
  std::string name;
};

CheckpointAdapter adapter_of(const fs::path& folder) {
  CheckpointAdapter out;
  const fs::path lock = folder / "config.lock.toml";
  if (!fs::exists(lock)) return out;
  const LoadedConfig loaded = load_config(lock.string(), {});
  out.registry = std::make_unique<PluginRegistry>(discover_plugins(config_plugin_dirs(loaded.tree)));
  out.config = std::make_unique<ResolvedConfig>(resolve_config(loaded.tree, *out.registry, /*launched=*/true));
  out.name = out.config->parallel().adapter;
  if (out.name != "none") out.adapter = make_plugin<Adapter>(*out.registry, out.config->table(out.name), out.name, {});
  return out;
}

// Writes `folder` through a staging folder renamed into place: a failure leaves nothing.
template <class Write>
void write_folder(const std::string& folder, const std::string& flag, Write write) {
  const fs::path staging = fs::path(folder).string() + ".partial";
  fs::remove_all(staging);
  try {
    write(staging);
  } catch (const std::exception& e) {
    std::error_code ec;
    fs::remove_all(staging, ec);
    throw Error(concat("exporting to ", folder, " failed, and nothing was left there: ", e.what()),
                concat("check free space and permissions where ", flag, " points"));
  }
  fs::remove_all(folder);  // empty, as check_new_folder made sure
  fs::rename(staging, folder);
}

void report(const fs::path& folder, const checkpoint::CheckpointReader& reader, const ModelSpec& spec,
            const NamedTensorList& tensors, const std::string& what, const std::string& dtype, const std::string& to) {
  int64_t bytes = 0;
  for (const auto& [name, t] : tensors) bytes += static_cast<int64_t>(t.nbytes());
  std::printf("exported %s (%s %s, step %lld): %zu %s, %s of %s, to %s\n", folder.c_str(), spec.family.c_str(),
              spec.size.c_str(), static_cast<long long>(reader.index().step), tensors.size(), what.c_str(),
              human_bytes(bytes).c_str(), dtype.c_str(), to.c_str());
}

}  // namespace

// The checkpoint's parameters, whole (adapters merged into their linears with --merge),
// in the asked dtype; or with --peft its adapters as a Hugging Face PEFT folder. Written
// beside the target and renamed into place: a failure leaves no half-written folder.
int export_hf(const ExportArgs& args) {
  const bool peft = args.peft_folder;
  const std::string& target = peft ? args.peft : args.hf;
  const std::string flag = peft ? "--peft" : "--hf";
  check_new_folder(target, "the export folder", flag, "plait never writes over an earlier model folder");
  const fs::path folder = checkpoint::resolve_checkpoint(args.path);
  checkpoint::CheckpointReader reader(folder);
  const auto& state = reader.index().state;
  PLAIT_CHECK(state.contains("model"), concat("checkpoint ", folder.string(), " does not record its model's dimensions"),
              "it was written by an older plait; resume it once with this one and export the new checkpoint");
  const ModelSpec spec = model_from_json(state.at("model"));
  CheckpointAdapter trained = adapter_of(folder);
  Adapter* adapter = trained.adapter.plugin.get();
  PLAIT_CHECK(adapter != nullptr || (!peft && !args.merge),
              concat(peft ? "--peft" : "--merge", ": checkpoint ", folder.string(), " trained no adapter"),
              "export its whole weights with --hf DIR alone");
  PLAIT_CHECK(adapter == nullptr || peft || args.merge,
              concat("checkpoint ", folder.string(), " holds the adapters of '", trained.name,
                     "' beside its frozen model: --hf alone would leave them out"),
              "add --merge to fold them into the weights, or write them for PEFT with --peft DIR");
  std::optional<AdaptedFactory> factory;
  if (adapter != nullptr) factory.emplace(make_dense_layer_factory(), *adapter);
  const StageModel model = adapter ? build_model(spec, *factory, {0, at::TensorOptions().device(at::kMeta)})
                                   : build_meta_model(spec);
  // Every tensor the model has: one left out would be initialised at random by whoever loads the export.
  check_checkpoint_holds_model(folder, reader.index(), model,
                               "its index does not match the model it records: the checkpoint is damaged; export another");
  const at::ScalarType dtype = args.dtype == "bfloat16" ? at::kBFloat16 : args.dtype == "float16" ? at::kHalf : at::kFloat;
  NamedTensorList weights;
  for (const ParamRef& p : model.all_parameters()) {
    if (peft && !p.tensor.requires_grad()) continue;  // the adapters alone: the trainable parameters
    const std::string key = checkpoint::state_tensor_name(state_kind::param, p.name);
    weights.emplace_back(p.name, reader.read(key, checkpoint::Region::whole(reader.index().tensors.at(key))).to(at::kFloat));
  }
  if (peft) {
    const std::string config =
        call_detached_plugin(trained.name, "peft_config", [&] { return adapter->peft_config(spec.family); });
    PLAIT_CHECK(!config.empty(), concat("--peft: adapter '", trained.name, "' has no Hugging Face PEFT form"),
                "export the merged model with --hf DIR --merge");
    for (auto& [name, t] : weights) name = "base_model.model." + name, t = t.to(dtype);
    write_folder(target, flag, [&](const fs::path& staging) {
      fs::create_directories(staging);
      save_safetensors((staging / "adapter_model.safetensors").string(), weights, {{"format", "pt"}});
      std::ofstream(staging / "adapter_config.json") << config << "\n";
    });
    report(folder, reader, spec, weights, "adapter tensors", args.dtype, target);
    return 0;
  }
  if (adapter != nullptr) call_detached_plugin(trained.name, "merge", [&] { adapter->merge(weights); });
  for (auto& [name, t] : weights) t = t.to(dtype);
  write_folder(target, flag, [&](const fs::path& staging) {
    write_hf_folder(staging, spec.family, hf_config(spec, args.dtype).dump(2), weights,
                    static_cast<int64_t>(args.shard_mb * 1e6));
  });
  report(folder, reader, spec, weights, adapter ? "tensors (adapters merged)" : "tensors", args.dtype, target);
  return 0;
}

}  // namespace plait::cli
