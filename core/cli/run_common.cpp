#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>
#include <torch/headeronly/version.h>

#include "checkpoint/checkpoint_files.hpp"
#include "config/config_loader.hpp"
#include "cli/run_modes.hpp"
#include "data/make_sampler.hpp"
#include "debug/fault_plan.hpp"
#include "log/logging.hpp"
#include "plait/sdk/error.hpp"
#include "util/short_number.hpp"
#include "output/run_folder.hpp"
#include "output/run_status.hpp"
#include "timing/device_peaks.hpp"

namespace plait::cli {
namespace fs = std::filesystem;

std::vector<std::string> RunArgs::overrides() const {
  std::vector<std::string> out = sets;
  if (steps) out.push_back(flag_override("--steps", concat(*steps)));
  // Absolute: ranks may start elsewhere than this shell.
  if (resume) out.push_back(flag_override("--resume", fs::absolute(*resume).lexically_normal().string()));
  if (allow_batch_change) out.push_back(flag_override("--allow-batch-change", "true"));
  if (max_restarts) out.push_back(flag_override("--max-restarts", concat(*max_restarts)));
  return out;
}

std::vector<std::string> RunArgs::override_argv() const {
  std::vector<std::string> argv;
  for (const auto& s : overrides()) {
    if (s.rfind("--", 0) != 0) argv.push_back("--set");
    argv.push_back(s);
  }
  return argv;
}

LaunchRequest launch_request(const RunArgs& args) {
  return {.config = args.config,
          .out = args.out,
          .nnodes = args.nnodes,
          .node_rank = args.node_rank,
          .nproc_per_node = args.nproc_per_node,
          .master_addr = args.master_addr,
          .master_port = args.master_port};
}

void warn_on_lock_drift(const PreparedRun& prep) {
  const Options& lock = prep.config->table("lock");
  if (auto v = lock.find<std::string>("plait_version"); v && *v != PLAIT_VERSION) {
    core_log().warn("this lock file was written by plait ", *v, "; this is plait ", PLAIT_VERSION);
  }
  if (auto v = lock.find<std::string>("torch_version"); v && *v != TORCH_VERSION) {
    core_log().warn("this lock file was written with LibTorch ", *v, "; this build uses ", TORCH_VERSION);
  }
  if (auto v = lock.find<int64_t>("params"); v && *v != closed_form_params(prep.model)) {
    core_log().warn("this lock file records ", *v, " parameters; the model now has ", closed_form_params(prep.model));
  }
}

std::string lock_text(const PreparedRun& prep) {
  const TrainSettings& train = prep.config->train();
  const int64_t seq_len = resolve_seq_len(prep.config->table("data"), prep.model);
  std::string text = concat("# config.lock.toml: the resolved config of this run, every default filled in, each\n",
                            "# value followed by where it came from (plait compare reads these).\n",
                            "# Written by plait ", PLAIT_VERSION, " at ", utc_now(), " from ", prep.loaded.path,
                            ".\n# Run it again with: plait run <this file>\n\n");
  text += prep.config->to_toml(/*provenance=*/true);
  text += concat("\n[lock]\nplait_version = \"", PLAIT_VERSION, "\"\ntorch_version = \"", TORCH_VERSION,
                 "\"\nparams = ", closed_form_params(prep.model),
                 "\nflops_per_token = ", ConfigValue::of(flops_per_token(prep.model, seq_len)).to_toml(),
                 "\npeak_flops = ", ConfigValue::of(effective_peak_flops(train)).to_toml(),
                 "\nworld_size = ", prep.world_size, "\n");
  // Every file read but the main config: the bundles (absolute: the lock may be read
  // from anywhere), with what they held.
  const std::vector<std::string>& files = prep.loaded.files;
  std::vector<ConfigValue> bundles, sums;
  for (std::size_t k = 0; k + 1 < files.size(); ++k) {
    bundles.push_back(ConfigValue::of(fs::absolute(files[k]).lexically_normal().string()));
    sums.push_back(ConfigValue::of(checkpoint::file_xxh3(files[k])));
  }
  if (!bundles.empty()) {
    text += concat("bundles = ", ConfigValue::of(bundles).to_toml(), "\nbundle_xxh3 = ", ConfigValue::of(sums).to_toml(),
                   "\n");
  }
  // Injected faults, PLAIT_FAULTS' too: a run that was damaged on purpose says so where its config is kept.
  std::vector<ConfigValue> faults;
  for (const auto& f : configured_faults(*prep.config)) faults.push_back(ConfigValue::of(f.text));
  if (!faults.empty()) text += concat("faults = ", ConfigValue::of(faults).to_toml(), "\n");
  return text;
}

void write_lock(const PreparedRun& prep, const std::string& folder) {
  write_file_atomically((fs::path(folder) / "config.lock.toml").string(), lock_text(prep));
}

std::string summary_from_metrics(const std::string& run_dir, double seconds, int64_t resume_step) {
  std::ifstream in(fs::path(run_dir) / "metrics.jsonl");
  std::string line;
  double first = std::nan(""), last = std::nan("");
  int64_t last_step = resume_step;
  while (std::getline(in, line)) {
    nlohmann::json record;
    try {
      record = nlohmann::json::parse(line);
    } catch (const std::exception&) {
      continue;  // a torn line (a full disk, a kill mid-write): the others still tell
    }
    const int64_t step = record.value("step", int64_t{0});
    if (step <= resume_step) continue;  // an earlier run's, before this one resumed
    const double loss = record.contains("loss") && record.at("loss").is_number() ? record.at("loss").get<double>() : std::nan("");
    if (std::isnan(first)) first = loss;
    last = loss;
    last_step = std::max(last_step, step);
  }
  // The steps this run trained, not the records it kept (log_every) nor an earlier run's.
  char buf[160];
  std::snprintf(buf, sizeof(buf), "done: loss %.4f -> %.4f over %lld steps in ", first, last,
                static_cast<long long>(last_step - resume_step));
  return buf + seconds_text(seconds);
}

RunPlan run_plan(const PreparedRun& prep, const std::string& folder, World* world, RunStatus* status) {
  return {.config = prep.config.get(),
          .registry = prep.registry.get(),
          .model = prep.model,
          .pipeline = &prep.pipeline,
          .out_dir = folder,
          .world = world,
          .status = status};
}

RunSummary train_logged(const RunPlan& plan) {
  try {
    return run_training(plan);
  } catch (const Error& e) {
    write_log_files(LogLevel::error, concat("run failed: ", e.what()));
    flush_logs();
    throw Error(e.what(), e.hint(), e.origin());
  } catch (const std::exception& e) {
    write_log_files(LogLevel::error, concat("run failed: ", e.what()));  // main() prints it to the console
    flush_logs();
    throw;
  }
}

}  // namespace plait::cli
