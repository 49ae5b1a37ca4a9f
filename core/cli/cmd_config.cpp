#include <iostream>

#include "cli/commands.hpp"
#include "cli/plan_report.hpp"
#include "config/config_loader.hpp"
#include "plait/sdk/error.hpp"
#include "plan/hardware.hpp"
#include "plan/plan_inputs.hpp"
#include "run/prepare.hpp"

namespace plait::cli {

int config_show(const ConfigArgs& args) {
  if (args.resolved) {
    PreparedRun prep = prepare_run(args.config, args.sets);
    log_config_notes(prep);
    std::cout << prep.config->to_toml(args.provenance);
  } else {
    check_schemas_for_machine(args.config, args.sets);
    std::cout << tree_to_toml(load_config(args.config, args.sets).tree, args.provenance);
  }
  return 0;
}

namespace {

// A value as the config gives it, with its place; the schema's default where it gives none.
struct Given {
  std::string value, place;
};

Given given(const ConfigTree& tree, const char* table, const char* key, const std::string& otherwise) {
  const ConfigEntry* e = tree.find(table, key);
  if (e == nullptr || e->value.type != ConfigValue::Type::string) return {otherwise, tree.default_place()};
  return {e->value.string, e->source.describe()};
}

// What the machine asks of the config beyond `plait run`'s checks: its accelerators'
// device, a communicator that moves their tensors, and whole nodes.
void check_for_machine(const ConfigTree& tree, const Hardware& hw, int64_t world, bool gpus_given) {
  const Given device = given(tree, "train", "device", "cpu"), comm = given(tree, "parallel", "comm", "gloo");
  PLAIT_CHECK(device.value == hw.device,
              concat(device.place, ": [train] device = \"", device.value, "\", but ", hw.id, "'s accelerators are ",
                     hw.device, " devices"),
              concat("set [train] device = \"", hw.device, "\" (plait plan --write sets it for the machine)"));
  PLAIT_CHECK(world == 1 || hw.device != "cuda" || comm.value != "gloo",
              concat(comm.place, ": [parallel] comm = \"gloo\" moves CPU tensors, and ", hw.id, "'s ranks hold CUDA ones"),
              concat("set [parallel] comm = \"", hw.comm, "\""));
  PLAIT_CHECK(world <= hw.gpus_per_node || world % hw.gpus_per_node == 0,
              concat(gpus_given ? "--gpus " : "the mesh's ", world, gpus_given ? "" : " ranks", ": ", hw.id,
                     "'s nodes hold ", hw.gpus_per_node, " accelerators each, and ", world, " do not fill whole nodes"),
              concat("give a multiple of ", hw.gpus_per_node, ", or at most ", hw.gpus_per_node));
}

}  // namespace

// Every check of `plait run` that does not need the machine itself: the config, the
// plugins' own checks and the mesh at --gpus ranks, for a machine this one need not be.
int config_validate_for_machine(const RunArgs& args, const std::string& hardware, std::optional<int64_t> gpus) {
  PLAIT_CHECK(!args.nnodes && !args.node_rank && !args.nproc_per_node && !args.master_addr && !args.master_port,
              "--hardware checks a config for a machine described by its file, and --nnodes, --node-rank, "
              "--nproc-per-node, --master-addr and --master-port place a run on this one",
              "drop those flags; --gpus N gives the ranks, the hardware file how many a node holds");
  const Hardware hw = load_hardware(hardware);
  const LoadedConfig loaded = load_config(args.config, args.overrides());
  std::vector<std::string> left;
  const PreparedRun prep =
      prepare_for_machine(args.config, args.overrides(),
                          gpus ? KnownWorld(static_cast<int>(*gpus), concat("--gpus ", *gpus)) : KnownWorld(),
                          /*scan_data=*/true, &left);
  log_config_notes(prep);
  check_for_machine(loaded.tree, hw, prep.world_size, gpus.has_value());
  const int64_t nodes = (prep.world_size + hw.gpus_per_node - 1) / hw.gpus_per_node;
  std::cout << args.config << ": valid for " << prep.world_size << " x " << hw.id << " (" << hw.name << "; " << nodes
            << (nodes == 1 ? " node" : " nodes") << "): " << prep.model.family << " " << prep.model.size << ", "
            << closed_form_params(prep.model) << " parameters, dp " << prep.mesh.dp << " x pp " << prep.mesh.pp
            << " x tp " << prep.mesh.tp << "\n";
  for (const std::string& what : left) std::cout << "  left to that machine, not checked here: " << what << "\n";
  return 0;
}

}  // namespace plait::cli
