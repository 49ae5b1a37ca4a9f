#include "run/config_checks.hpp"

#include <cfloat>
#include <cmath>

#include <ATen/detail/CUDAHooksInterface.h>

#include "debug/fault_plan.hpp"
#include "distributed/launch_env.hpp"
#include "distributed/mesh.hpp"
#include "plait/sdk/error.hpp"
#include "util/short_number.hpp"

namespace plait {

void check_devices(const ResolvedConfig& config) {
  const Options& train = config.table("train");
  const TrainSettings& settings = config.train();
  const bool cuda = settings.device == "cuda";
  PLAIT_CHECK(!cuda || at::detail::getCUDAHooks().getNumGPUs() > 0,
              concat(train.where("device"), ": [train] device = \"cuda\", but no CUDA device is visible"),
              "run on a machine with a GPU, or set device = \"cpu\"");
  PLAIT_CHECK(settings.memory_limit_mb == 0.0 || !cuda,
              concat(train.where("memory_limit_mb"),
                     ": [train] memory_limit_mb is enforced on CPU runs only ([train] device is \"cuda\")"),
              "on a GPU the device's own memory is the budget: remove the key");
}

void check_optimizer_numbers(const ResolvedConfig& config) {
  const Options& train = config.table("train");
  const TrainSettings& settings = config.train();
  for (const char* beta : {"beta1", "beta2"}) {
    PLAIT_CHECK(train.get<double>(beta) < 1.0,
                concat(train.where(beta), ": [train] ", beta, " = 1: AdamW's bias correction 1 - ", beta,
                       "^t would be 0, and the update would divide by it"),
                "choose a value below 1 (GPT-2: beta1 0.9, beta2 0.95)");
  }
  if (settings.dtype == "float64") return;
  const double lr = settings.lr, wd = settings.weight_decay;
  const double step_size = lr / (1.0 - settings.beta1);
  const char* hint = "a learning rate is usually well below 1 (GPT-2 small: 6e-4)";
  PLAIT_CHECK(step_size < FLT_MAX,
              concat(train.where("lr"), ": [train] lr = ", short_number(lr, 3), " is too large for float32 parameters: AdamW's "
                     "first step moves them by up to lr / (1 - beta1) = ", short_number(step_size, 3),
                     ", past float32's largest value ", short_number(FLT_MAX, 3)),
              hint);
  PLAIT_CHECK(lr * wd < FLT_MAX,
              concat(train.where("weight_decay"), ": [train] lr x weight_decay = ", short_number(lr * wd, 3),
                     " is past float32's largest value ", short_number(FLT_MAX, 3), " (weight decay scales by 1 - lr x wd)"),
              "weight decay is usually between 0 and 0.1");
  PLAIT_CHECK(settings.eps < FLT_MAX,
              concat(train.where("eps"), ": [train] eps = ", short_number(settings.eps, 3),
                     " is past float32's largest value ", short_number(FLT_MAX, 3)),
              "AdamW's eps is usually 1e-8");
}

MeshShape resolve_configured_mesh(const ResolvedConfig& config, const KnownWorld& known_world) {
  const Options& parallel = config.table("parallel");
  std::string place = parallel.where("dp");
  for (const char* axis : {"tp", "pp", "dp"}) {
    if (!parallel.is_default(axis)) place = parallel.where(axis);  // the first the user set, dp first
  }
  return at_place(place, [&] {
    const ParallelSettings& p = config.parallel();
    return resolve_mesh(static_cast<int>(p.dp), static_cast<int>(p.pp), static_cast<int>(p.tp), known_world.processes,
                        known_world.from);
  });
}

void check_mesh_roles(const ResolvedConfig& config, const MeshShape& mesh) {
  const Options& parallel = config.table("parallel");
  PLAIT_CHECK(mesh.tp == 1 || config.parallel().tensor != "none",
              concat(parallel.where("tp"), ": [parallel] tp = ", mesh.tp, " needs a tensor-parallel plugin, but [parallel] "
                     "tensor = \"none\": the ", mesh.tp, " ranks of each tensor-parallel group would repeat each other's work"),
              "set [parallel] tensor = \"megatron\", or tp = 1");
}

namespace {

// The groups World connects: the whole world and each axis of more than one rank.
std::vector<std::string> groups_of(const MeshShape& shape, int rank) {
  std::vector<std::string> groups;
  if (shape.world() == 1) return groups;
  groups.push_back("world");
  const Mesh mesh(shape, rank);
  for (Axis axis : {Axis::pp, Axis::dp, Axis::tp}) {
    if (shape.size(axis) > 1) groups.push_back(mesh.group_name(axis));
  }
  return groups;
}

FaultReach fault_reach(const ResolvedConfig& config, const MeshShape& mesh) {
  const int64_t steps = config.train().steps;
  const Options& checkpoint = config.table("checkpoint");
  const int64_t every = checkpoint.get<int64_t>("every");
  const bool final = checkpoint.get<bool>("final");
  return {.world_size = mesh.world(),
          .steps = steps,
          .max_restarts = std::max<int64_t>(config.distributed().max_restarts, torchrun_max_restarts()),
          .groups_of = [mesh](int rank) { return groups_of(mesh, rank); },
          .saves_at = [=](int64_t step) { return (every > 0 && step % every == 0) || (final && step == steps); }};
}

// Whether a core key's value is not its schema's default: a lock file writes every key, so
// "set" cannot tell what the user chose, but a value that was changed can.
bool changed(const Options& table, const std::string& key) {
  const TableSchema& schema = core_schema(table.table());
  const OptionSpec* spec = schema.find(key);
  if (spec == nullptr || !spec->default_value) return true;
  return check_value(schema, key, *spec->default_value, Source::from_default()) != table.values().at(key);
}

// Where the other setting of a pair came from, "the default" when nobody chose it.
std::string chosen_at(const Options& table, const std::string& key) {
  return table.is_default(key) ? std::string("the default") : table.where(key);
}

// A setting changed from its default while another setting makes it do nothing.
void check_companions_in_force(const ResolvedConfig& config) {
  const Options& train = config.table("train");
  PLAIT_CHECK(config.train().lr_schedule != "constant" || !changed(train, "min_lr_ratio"),
              concat(train.where("min_lr_ratio"), ": [train] min_lr_ratio = ", short_number(config.train().min_lr_ratio, 6),
                     " sets where cosine decay ends, but [train] lr_schedule = \"constant\" (", chosen_at(train, "lr_schedule"),
                     ") never decays"),
              "set lr_schedule = \"cosine\", or remove min_lr_ratio");
  PLAIT_CHECK(config.train().on_nonfinite != "stop" || !changed(train, "nonfinite_skip_limit"),
              concat(train.where("nonfinite_skip_limit"), ": [train] nonfinite_skip_limit counts skipped steps, but "
                     "[train] on_nonfinite = \"stop\" (", chosen_at(train, "on_nonfinite"), ") skips none"),
              "set on_nonfinite = \"skip\", or remove nonfinite_skip_limit");
  const Options& dist = config.table("distributed");
  const DistributedSettings& d = config.distributed();
  PLAIT_CHECK(d.hang_warning_s < d.collective_timeout_s || !changed(dist, "hang_warning_s"),
              concat(dist.where("hang_warning_s"), ": [distributed] hang_warning_s = ", short_number(d.hang_warning_s, 6),
                     " is not below collective_timeout_s = ", short_number(d.collective_timeout_s, 6), " (",
                     chosen_at(dist, "collective_timeout_s"), "): an operation fails before it would be warned about"),
              "choose a hang warning below the collective timeout");
  const Options& checkpoint = config.table("checkpoint");
  PLAIT_CHECK(!checkpoint.get<bool>("async") || checkpoint.get<int64_t>("every") > 0 || checkpoint.get<bool>("final"),
              concat(checkpoint.where("async"), ": [checkpoint] async = true writes checkpoints from a thread, but "
                     "every = 0 and final = false: the run saves none"),
              "set [checkpoint] every = N (or final = true), or remove async");
}

}  // namespace

void check_settings_take_effect(const ResolvedConfig& config, const MeshShape& mesh) {
  check_companions_in_force(config);
  const Options& data = config.table("data");
  if (config.data().source == "synthetic") {
    PLAIT_CHECK(!config.data().path,
                concat(data.where("path"), ": [data] path is set, but [data] source = \"synthetic\" reads no file"),
                "set [data] source = \"tokens\" (or \"text\") to train on the file, or remove path");
    // By value, not by whether it was set: a lock file sets every key.
    PLAIT_CHECK(config.data().order != "sequential",
                concat(data.where("order"), ": [data] order applies to file data; [data] source = \"synthetic\" makes "
                       "each sequence from its own seed"),
                "remove order, or train on a file");
  }
  const Options& debug = config.table("debug");
  const int64_t steps = config.train().steps;
  for (const int64_t step : config.debug().trace_steps) {
    PLAIT_CHECK(step >= 1 && step <= steps,
                concat(debug.where("trace_steps"), ": [debug] trace_steps names step ", step, ", which ",
                       step < 1 ? "is not a step (steps count from 1)" : concat("is past the run's last step (", steps, ")")),
                concat("choose steps from 1 to ", steps));
  }
  // Faults (the older slow and nonfinite keys' too): malformed ones, and ones that would
  // never strike, are refused before launch.
  check_faults(configured_faults(config), fault_reach(config, mesh));
}

}  // namespace plait
