#include "run/compatibility.hpp"

#include "plait/sdk/capabilities.hpp"
#include "plait/sdk/error.hpp"

namespace plait {

void check_compatibility(const ResolvedConfig& config, const PluginRegistry& registry) {
  const Options& train = config.table("train");
  const Options& parallel = config.table("parallel");
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
  } else if (checkpoint.get<std::string>("resume") == "auto") {
    saves = "checkpoint.resume = \"auto\"", saves_place = checkpoint.where("resume");
  } else if (checkpoint.get<int64_t>("every") > 0) {
    saves = concat("checkpoint.every = ", checkpoint.get<int64_t>("every")), saves_place = checkpoint.where("every");
  } else if (checkpoint.get<bool>("final") && !checkpoint.is_default("final")) {
    saves = "checkpoint.final = true", saves_place = checkpoint.where("final");
  }

  struct Need {
    bool when;
    const char* capability;
    std::string what;   // the other side of the combination
    std::string place;  // where that side was set
  };
  const std::vector<Need> needs = {
      {train.get<int64_t>("grad_accum") > 1, capability::grad_accum,
       concat("train.grad_accum = ", train.get<int64_t>("grad_accum")), train.where("grad_accum")},
      {train.get<std::string>("dtype") == "bfloat16", capability::bf16, "train.dtype = \"bfloat16\"", train.where("dtype")},
      {train.get<std::string>("dtype") == "float64", capability::float64, "train.dtype = \"float64\"", train.where("dtype")},
      {parallel.get<int64_t>("dp") != 1, capability::multi_rank, concat("parallel.dp = ", parallel.get<int64_t>("dp")),
       parallel.where("dp")},
      {parallel.get<std::string>("pipeline") != "none", capability::pipeline,
       concat("pipeline plugin '", parallel.get<std::string>("pipeline"), "'"), parallel.where("pipeline")},
      {parallel.get<std::string>("tensor") != "none", capability::tensor,
       concat("tensor plugin '", parallel.get<std::string>("tensor"), "'"), parallel.where("tensor")},
      {parallel.get<std::string>("offload") != "none", capability::offload,
       concat("offload plugin '", parallel.get<std::string>("offload"), "'"), parallel.where("offload")},
      {!saves.empty(), capability::checkpoint, saves, saves_place},
  };
  for (const auto& need : needs) {
    if (need.when && !dp.has_capability(need.capability)) {
      // Lead with the side the user chose: the data plugin, unless it is the default.
      throw Error(concat(data->is_default() ? need.place : data->place, ": data plugin '", dp.name,
                         "' cannot be combined with ", need.what, ": it lacks the capability '", need.capability, "'"),
                  concat("choose a data plugin with '", need.capability, "' (`plait plugins` lists capabilities)"));
    }
  }
}

}  // namespace plait
