#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>

#include <torch/headeronly/version.h>

#include "cli/commands.hpp"
#include "data/make_sampler.hpp"
#include "log/logging.hpp"
#include "model/model_spec.hpp"
#include "plait/sdk/error.hpp"
#include "run/prepare.hpp"
#include "run/run_folder.hpp"
#include "train/trainer.hpp"

namespace plait::cli {
namespace {

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string lock_text(const PreparedRun& prep, int64_t seq_len) {
  const Options& train = prep.config->table("train");
  std::string text = concat("# config.lock.toml: the resolved config of this run, every default filled in.\n",
                            "# Written by plait ", PLAIT_VERSION, " at ", utc_now(), " from ", prep.loaded.path,
                            ".\n# Run it again with: plait run <this file>\n\n");
  text += prep.config->to_toml(/*provenance=*/false);
  text += concat("\n[lock]\nplait_version = \"", PLAIT_VERSION, "\"\ntorch_version = \"", TORCH_VERSION,
                 "\"\nparams = ", closed_form_params(prep.model),
                 "\nflops_per_token = ", ConfigValue::of(flops_per_token(prep.model, seq_len)).to_toml(),
                 "\npeak_flops = ", ConfigValue::of(train.get<double>("peak_flops")).to_toml(),
                 "\nworld_size = ", prep.world_size, "\n");
  return text;
}

// A lock file run again: say what differs from this build.
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

}  // namespace

int run(const RunArgs& args) {
  std::vector<std::string> sets = args.sets;
  if (args.steps) sets.push_back(concat("train.steps=", *args.steps));
  PreparedRun prep = prepare_run(args.config, sets);
  warn_on_lock_drift(prep);
  const int64_t seq_len = resolve_seq_len(prep.config->table("data"), prep.model);

  // Every check has passed: only now does anything get written.
  const std::string folder = choose_run_folder(args.out, args.config);
  create_run_folder(folder);
  configure_logging((std::filesystem::path(folder) / "run.log").string(), args.verbose);
  write_file_atomically((std::filesystem::path(folder) / "config.lock.toml").string(), lock_text(prep, seq_len));
  core_log().info("plait ", PLAIT_VERSION, " (LibTorch ", TORCH_VERSION, "): ", args.config, " -> ", folder);

  RunSummary summary;
  try {
    summary = run_training({prep.config.get(), prep.registry.get(), prep.model, folder});
  } catch (const std::exception& e) {
    core_log().write(LogLevel::error, concat("run failed: ", e.what()));  // into run.log as well
    flush_logs();
    throw;
  }
  char line[160];
  std::snprintf(line, sizeof(line), "done: loss %.4f -> %.4f over %zu steps in %.1f s", summary.losses.front(),
                summary.losses.back(), summary.losses.size(), summary.seconds);
  core_log().info(line, "; run folder ", folder);
  flush_logs();
  return 0;
}

}  // namespace plait::cli
