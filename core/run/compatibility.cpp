#include "run/compatibility.hpp"

#include "plait/sdk/capabilities.hpp"
#include "plait/sdk/error.hpp"

namespace plait {

void check_compatibility(const ResolvedConfig& config, const PluginRegistry& registry) {
  const Options& train = config.table("train");
  const TrainSettings& settings = config.train();
  const Options& parallel = config.table("parallel");  // for where()
  const ParallelSettings& p = config.parallel();
  const PluginChoice* data = nullptr;
  for (const auto& c : config.plugins()) {
    if (c.role == "data") data = &c;
  }
  const PluginRecord& dp = *registry.find(data->name);
  const Options& checkpoint = config.table("checkpoint");
  // What asks for checkpoints, and where (a `final` left at its default only warns: checkpoint_saver.cpp).
  std::string saves, saves_place;
  if (checkpoint.has("resume_from")) {
    saves = "resuming (checkpoint.resume_from)", saves_place = checkpoint.where("resume_from");
  } else if (config.checkpoint().resume == "auto") {
    saves = "checkpoint.resume = \"auto\"", saves_place = checkpoint.where("resume");
  } else if (config.checkpoint().every > 0) {
    saves = concat("checkpoint.every = ", config.checkpoint().every), saves_place = checkpoint.where("every");
  } else if (config.checkpoint().final && !config.checkpoint().final_is_default) {
    saves = "checkpoint.final = true", saves_place = checkpoint.where("final");
  }

  struct Need {
    bool when;
    const char* capability;
    std::string what;   // the other side of the combination
    std::string place;  // where that side was set
  };
  const std::vector<Need> needs = {
      {settings.grad_accum > 1, capability::grad_accum,
       concat("train.grad_accum = ", settings.grad_accum), train.where("grad_accum")},
      {settings.dtype == "bfloat16", capability::bf16, "train.dtype = \"bfloat16\"", train.where("dtype")},
      {settings.dtype == "float64", capability::float64, "train.dtype = \"float64\"", train.where("dtype")},
      {p.dp != 1, capability::multi_rank, concat("parallel.dp = ", p.dp), parallel.where("dp")},
      {p.pipeline != "none", capability::pipeline, concat("pipeline plugin '", p.pipeline, "'"), parallel.where("pipeline")},
      {p.tensor != "none", capability::tensor, concat("tensor plugin '", p.tensor, "'"), parallel.where("tensor")},
      {p.offload != "none", capability::offload, concat("offload plugin '", p.offload, "'"), parallel.where("offload")},
      {!saves.empty(), capability::checkpoint, saves, saves_place},
      {!train.get<std::vector<std::string>>("freeze").empty(), capability::frozen, "train.freeze (frozen parameters)",
       train.where("freeze")},
      {p.adapter != "none", capability::frozen, concat("adapter plugin '", p.adapter, "' (it freezes the base model)"),
       parallel.where("adapter")},
  };
  for (const auto& need : needs) {
    if (need.when && !dp.has_capability(need.capability)) {
      // Lead with the side the user chose: the data plugin, unless it is the default; name
      // the other side's place too (a --set, a flag) when it is elsewhere.
      const std::string& lead = data->is_default() ? need.place : data->place;
      throw Error(concat(lead, ": data plugin '", dp.name, "' cannot be combined with ", need.what,
                         need.place != lead && !need.place.empty() ? concat(" (", need.place, ")") : std::string(), ": ",
                         dp.lacking(need.capability)),
                  concat("choose a data plugin with '", need.capability, "' (`plait plugins` lists capabilities)"));
    }
  }
  // An adapter beside tensor parallel lives inside the tensor plugin's split products: both sides must say so.
  if (p.adapter != "none" && p.tensor != "none") {
    const PluginRecord& tensor = *registry.find(p.tensor);
    const PluginRecord& adapter = *registry.find(p.adapter);
    PLAIT_CHECK(tensor.has_capability(capability::adapters),
                concat(parallel.where("adapter"), ": adapter plugin '", p.adapter, "' cannot be combined with tensor plugin '",
                       p.tensor, "' (", parallel.where("tensor"), "): ", tensor.lacking(capability::adapters),
                       " (its layers cannot host adapters)"),
                "choose a tensor plugin with 'adapters' (megatron), or train adapters with data and pipeline parallel alone");
    PLAIT_CHECK(adapter.has_capability(capability::tensor),
                concat(parallel.where("adapter"), ": adapter plugin '", p.adapter, "' cannot be combined with tensor plugin '",
                       p.tensor, "' (", parallel.where("tensor"), "): ", adapter.lacking(capability::tensor),
                       " (it does not split itself like its linears)"),
                "choose an adapter with 'tensor' (lora), or train it with data and pipeline parallel alone");
  }
}

}  // namespace plait
