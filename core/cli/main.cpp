// plait: a training runtime in which every parallelism strategy is a plugin.
#include <csignal>
#include <cstring>
#include <iostream>

#include <CLI/CLI.hpp>
#include <c10/util/Exception.h>

#include "cli/commands.hpp"
#include "cli/flags.hpp"
#include "cli/plan_report.hpp"
#include "debug/exception_text.hpp"
#include "log/logging.hpp"
#include "plait/sdk/error.hpp"
#include "util/subprocess.hpp"
#include "train/reproducible_math.hpp"

namespace {

using namespace plait::cli;

// Numeric flags as typed, converted by plait once CLI11 has parsed the words.
struct RawRunFlags {
  std::optional<std::string> steps, nnodes, node_rank, nproc_per_node, master_port, max_restarts;

  void into(RunArgs& args) const {
    constexpr int64_t kMaxInt = 1 << 30;
    args.steps = integer_flag("--steps", steps, 1, int64_t{1} << 53);
    auto small = [&](const char* flag, const std::optional<std::string>& text, int64_t min, int64_t max) {
      const auto v = integer_flag(flag, text, min, max);
      return v ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;
    };
    args.nnodes = small("--nnodes", nnodes, 1, kMaxInt);
    args.node_rank = small("--node-rank", node_rank, 0, kMaxInt);
    args.nproc_per_node = small("--nproc-per-node", nproc_per_node, 1, kMaxInt);
    args.master_port = small("--master-port", master_port, 1, 65535);
    args.max_restarts = small("--max-restarts", max_restarts, 0, 1000);
  }
};

// The options `plait run` takes; `plait config validate` takes the same, to check the same.
void add_run_options(CLI::App* cmd, RunArgs& args, RawRunFlags& raw) {
  cmd->add_option("config", args.config, "Config file (TOML)")->required();
  cmd->add_option("--set", args.sets, "Override a value: table.key=value (repeatable)")->allow_extra_args(false);
  cmd->add_option("--steps", raw.steps, "Optimizer steps (overrides train.steps)");
  cmd->add_option("--out", args.out, "Run folder (default runs/<config>-<time>); must not exist or be empty");
  cmd->add_option("--resume", args.resume,
                  "Resume from a checkpoint: a step-<N> folder, a folder of checkpoints or a run folder (its latest)");
  cmd->add_flag("--allow-batch-change", args.allow_batch_change,
                "Resume even though the global batch (dp x micro_batch_size x grad_accum) differs from the checkpoint's");
  cmd->add_option("--nnodes", raw.nnodes, "Machines in the job (default 1)");
  cmd->add_option("--node-rank", raw.node_rank, "This machine's index, 0 .. nnodes-1");
  cmd->add_option("--nproc-per-node", raw.nproc_per_node, "Ranks on each machine (default: the mesh's)");
  cmd->add_option("--master-addr", args.master_addr, "Address of node 0, which hosts the rendezvous store");
  cmd->add_option("--master-port", raw.master_port, "Port of the rendezvous store on node 0");
  cmd->add_option("--max-restarts", raw.max_restarts,
                  "Restart the job from its newest sound checkpoint after a fault, at most this many times "
                  "(overrides distributed.max_restarts)");
}

int usage_error(const CLI::App& app, const std::string& message) {
  std::cerr << "error: " << message << "\n  hint: `" << chosen_command(app) << " --help` lists what it takes\n";
  return 2;
}

int report(const std::string& message, const std::string& hint, const std::string& origin, bool verbose) {
  plait::flush_logs();
  std::cerr << "error: " << message << "\n";
  if (!hint.empty()) std::cerr << "  hint: " << hint << "\n";
  if (verbose && !origin.empty()) std::cerr << "  debug: raised at " << origin << "\n";
  return 1;
}

// Every subcommand's arguments, as CLI11 fills them, and which subcommand was chosen.
struct Commands {
  bool verbose = false, version = false;
  RunArgs run, validate;
  RawRunFlags run_raw, validate_raw, check_raw;
  std::optional<std::string> validate_hardware, validate_gpus;  // validate for a machine it is not on
  CheckArgs check;
  std::optional<std::string> tolerance;
  PluginsArgs plugins;
  BundlesArgs bundles;
  CLI::App* bundles_cmd = nullptr;
  ConfigArgs show;
  ScheduleArgs schedule;
  CheckpointArgs inspect_ckpt, verify_ckpt;
  CheckpointDiffArgs diff_ckpt;
  CLI::App *inspect_ckpt_cmd = nullptr, *verify_ckpt_cmd = nullptr, *diff_ckpt_cmd = nullptr;
  ExportArgs export_args;
  CompareArgs compare_args;
  CLI::App* compare_cmd = nullptr;
  SweepArgs sweep_args;
  std::optional<std::string> sweep_steps, sweep_repeats;
  CLI::App* sweep_cmd = nullptr;
  std::optional<std::string> export_shard_mb;
  CLI::Option* export_peft = nullptr;
  CLI::App* export_cmd = nullptr;
  PlanArgs plan_args;
  std::optional<std::string> plan_gpus, plan_seq_len, plan_global_batch, plan_top, plan_tokens, plan_scale;
  CLI::App* plan_cmd = nullptr;
  DebugArgs debug_args;
  std::optional<std::string> debug_wait;
  CLI::App* debug_cmd = nullptr;
  VerifyArgs verify_args;
  NewPluginArgs new_plugin_args;
  CLI::App* new_plugin_cmd = nullptr;
  std::optional<std::string> verify_combos, verify_seed, verify_loss_gap;
  CLI::App* verify_cmd = nullptr;
  CLI::App *run_cmd = nullptr, *check_cmd = nullptr, *plugins_cmd = nullptr, *models_cmd = nullptr,
           *show_cmd = nullptr, *validate_cmd = nullptr, *schedule_cmd = nullptr;
};

void add_check_command(CLI::App& app, Commands& c) {
  c.check_cmd = app.add_subcommand(
      "check", "Equivalence check: run a config and its single-process reference, compare losses and gradients");
  c.check_cmd->add_option("config", c.check.run.config, "Config file (TOML) with the strategy to judge")->required();
  c.check_cmd->add_option("--set", c.check.run.sets, "Override a value: table.key=value (repeatable)")
      ->allow_extra_args(false);
  c.check_cmd->add_option("--steps", c.check_raw.steps, "Optimizer steps (overrides train.steps)");
  c.check_cmd->add_option("--out", c.check.run.out, "Folder for both runs and the report");
  c.check_cmd->add_option("--tolerance", c.tolerance,
                          "Largest relative difference allowed (default 1e-10 in float64, 1e-5 in float32)");
  c.check_cmd->add_option("--nproc-per-node", c.check_raw.nproc_per_node, "Ranks of the candidate run");
  c.verify_cmd = app.add_subcommand(
      "verify", "Verify a plugin: its library and schema, equivalence composed with the other kinds, checkpoints, honesty");
  c.verify_cmd->add_option("plugin", c.verify_args.plugin, "A plugin's name, or the path of its library")->required();
  c.verify_cmd->add_flag("--quick", c.verify_args.quick, "A few cases of each group (minutes, not a quarter hour)");
  c.verify_cmd->add_option("--json", c.verify_args.json, "Also write the report (JSON) to this file");
  c.verify_cmd->add_option("--out", c.verify_args.out, "Folder for every case's runs (default runs/verify-<plugin>-<time>)");
  auto* new_cmd = app.add_subcommand("new", "Start something new from a template");
  new_cmd->require_subcommand(1);
  c.new_plugin_cmd = new_cmd->add_subcommand("plugin", "Write an out-of-tree plugin project: a working strategy, schema, "
                                                       "config, README and a test script that runs plait verify");
  c.new_plugin_cmd->add_option("name", c.new_plugin_args.name, "The plugin's name (lower-case letters, digits, '-')")->required();
  c.new_plugin_cmd->add_option("--kind", c.new_plugin_args.kind, "data, pipeline, tensor, offload, comm or adapter")->required();
  c.new_plugin_cmd->add_option("--from", c.new_plugin_args.from, "sharding: a data plugin on plait::sharding");
  c.new_plugin_cmd->add_option("--dir", c.new_plugin_args.dir, "The project's folder (default ./NAME); must not exist or be empty");
  c.verify_cmd->add_option("--combos", c.verify_combos, "Also check N random valid combinations of mesh, options and other plugins");
  c.verify_cmd->add_option("--seed", c.verify_seed, "Seed of the combinations (default 1): the same seed draws the same ones");
  c.verify_cmd->add_option("--set", c.verify_args.sets, "Add table.key=value to every case, e.g. the plugin's options (repeatable)")
      ->allow_extra_args(false);
  c.verify_cmd->add_option("--loss-gap", c.verify_loss_gap,
                           "An approximate plugin passes when its final loss is at most this fraction above ddp's (default 0.05)");
}

void add_inspect_commands(CLI::App& app, Commands& c) {
  c.plugins_cmd = app.add_subcommand("plugins", "List the plugins found, and any refused");
  c.plugins_cmd->add_flag("--json", c.plugins.json, "Machine-readable output");
  c.models_cmd = app.add_subcommand("models", "List model families and sizes with parameter counts");
  c.bundles_cmd = app.add_subcommand("bundles", "List the bundles `extends` can name, with what each sets");
  c.bundles_cmd->add_option("config", c.bundles.config, "A config whose [bundles] paths to search too");
  c.bundles_cmd->add_flag("--json", c.bundles.json, "Machine-readable output");
  auto* config_cmd = app.add_subcommand("config", "Inspect configs");
  config_cmd->require_subcommand(1);
  c.show_cmd = config_cmd->add_subcommand("show", "Print a config merged from its bundles and --set flags");
  c.show_cmd->add_option("config", c.show.config, "Config file (TOML)")->required();
  c.show_cmd->add_option("--set", c.show.sets, "Override a value: table.key=value")->allow_extra_args(false);
  c.show_cmd->add_flag("--resolved", c.show.resolved, "Fill in every default, as the run's lock file will");
  c.show_cmd->add_flag("--provenance", c.show.provenance, "Say which file, flag or default set each value");
  c.validate_cmd = config_cmd->add_subcommand(
      "validate", "Make every check `plait run` makes with the same flags, without running: valid means it will start");
  add_run_options(c.validate_cmd, c.validate, c.validate_raw);
  c.validate_cmd->add_option("--hardware", c.validate_hardware,
                             "Check it for this machine instead of this one (a100-80g, h100-sxm, ... or a hardware "
                             "file): no local GPU or communicator is asked for");
  c.validate_cmd->add_option("--gpus", c.validate_gpus, "With --hardware: the ranks it runs on (default: its mesh's)");
}

void add_schedule_and_checkpoint_commands(CLI::App& app, Commands& c) {
  auto* schedule_cmd = app.add_subcommand("schedule", "Inspect pipeline schedules");
  schedule_cmd->require_subcommand(1);
  c.schedule_cmd =
      schedule_cmd->add_subcommand("show", "Draw every pipeline rank's schedule as a timeline (nominal costs)");
  c.schedule_cmd->add_option("config", c.schedule.config, "Config file (TOML)")->required();
  c.schedule_cmd->add_option("--set", c.schedule.sets, "Override a value: table.key=value")->allow_extra_args(false);
  c.schedule_cmd->add_option("--trace", c.schedule.trace, "Also write the timeline as a Chrome trace (JSON)");
  auto* checkpoint_cmd = app.add_subcommand("checkpoint", "Inspect and verify checkpoints");
  checkpoint_cmd->require_subcommand(1);
  c.inspect_ckpt_cmd = checkpoint_cmd->add_subcommand(
      "inspect", "Step, tokens, the mesh and plugins it was saved under, its tensors and files");
  c.inspect_ckpt_cmd->add_option("path", c.inspect_ckpt.path, "Checkpoint, folder of checkpoints, or run folder")
      ->required();
  c.verify_ckpt_cmd = checkpoint_cmd->add_subcommand("verify", "Check every file's size and checksum");
  c.verify_ckpt_cmd->add_option("path", c.verify_ckpt.path, "Checkpoint, folder of checkpoints, or run folder")
      ->required();
  c.diff_ckpt_cmd = checkpoint_cmd->add_subcommand(
      "diff", "Whether two checkpoints hold the same state, tensor by tensor (exit 3 and the first difference if not)");
  c.diff_ckpt_cmd->add_option("a", c.diff_ckpt.a, "Checkpoint, folder of checkpoints, or run folder")->required();
  c.diff_ckpt_cmd->add_option("b", c.diff_ckpt.b, "Checkpoint, folder of checkpoints, or run folder")->required();
}

void add_compare_commands(CLI::App& app, Commands& c) {
  c.compare_cmd = app.add_subcommand("compare", "Compare runs: config differences, loss agreement, speed, time, memory");
  c.compare_cmd->add_option("runs", c.compare_args.runs, "Two or more run folders, or a sweep folder")->required();
  c.compare_cmd->add_option("--markdown", c.compare_args.markdown, "Also write the report as Markdown to this file");
  c.compare_cmd->add_option("--html", c.compare_args.html,
                            "Also write the report as one self-contained HTML page (inline SVG charts) to this file");
  c.sweep_cmd = app.add_subcommand("sweep", "Run every combination of some settings, then compare the runs");
  c.sweep_cmd->add_option("config", c.sweep_args.config, "The config every run starts from")->required();
  c.sweep_cmd->add_option("--vary", c.sweep_args.vary, "KEY=V1,V2,...: a setting and the values to try (repeatable)")
      ->required();
  c.sweep_cmd->add_option("--set", c.sweep_args.sets, "table.key=value for every run (repeatable)");
  c.sweep_cmd->add_option("--repeats", c.sweep_repeats, "Runs of each combination, interleaved (default 1)");
  c.sweep_cmd->add_option("--steps", c.sweep_steps, "Steps of each run (default: the config's)");
  c.sweep_cmd->add_option("--out", c.sweep_args.out, "The sweep folder (default runs/sweep-<config>-<time>)");
}

void add_plan_command(CLI::App& app, Commands& c) {
  c.plan_cmd = app.add_subcommand(
      "plan", "Find the fastest strategy that fits a model on N accelerators, or explain one config's memory and time");
  c.plan_cmd->add_option("--model", c.plan_args.model,
                         "The model to plan: family-size (gpt2-124m, llama-7b, llama-70b: `plait models`) or a config");
  c.plan_cmd->add_option("--explain", c.plan_args.explain, "Explain one config instead (TOML)");
  c.plan_cmd->add_option("--against", c.plan_args.against,
                         "Set a run's measured phases and memory beside the prediction (its config unless --explain); "
                         "a folder of runs (a sweep's): rank them as the planner does, beside their measured speed");
  c.plan_cmd->add_flag("--measure", c.plan_args.measure,
                       "With --explain: build each pipeline rank's first rank and run its step on the meta device "
                       "(no memory, at any --gpus), and set its state and traffic beside the prediction");
  c.plan_cmd->add_option("--seq-len", c.plan_seq_len, "Tokens per sequence (default: the model's context)");
  c.plan_cmd->add_option("--global-batch", c.plan_global_batch, "Sequences per optimizer step (default 512)");
  c.plan_cmd->add_option("--top", c.plan_top, "Plans to list (default 5)");
  c.plan_cmd->add_option("--write", c.plan_args.write, "Save the best plan as a config here (a new file)");
  c.plan_cmd->add_flag("--bundle", c.plan_args.bundle,
                       "With --write: save the plan's own choices (mesh, plugins, checkpointing, batch split) as a bundle "
                       "for configs to extend");
  c.plan_cmd->add_option("--tokens", c.plan_tokens,
                         "Price a run of this many tokens (e.g. 2e12, 500B, 2T): days, accelerator-hours, cost, "
                         "interruptions");
  c.plan_cmd->add_option("--scale", c.plan_scale, "Accelerator counts to find the best plan at, e.g. 8,64,512,4096");
  c.plan_cmd->add_flag("--calibrate", c.plan_args.calibrate,
                       "Measure this machine (GEMMs, memory, AdamW, gloo between its cores) as the hardware cpu-local");
  c.plan_cmd->add_option("--set", c.plan_args.sets, "Override a value: table.key=value (repeatable)")
      ->allow_extra_args(false);
  c.plan_cmd->add_option("--hardware", c.plan_args.hardware,
                         "A machine in configs/hardware (a100-80g, h100-sxm, h200-sxm, b200) or a hardware file "
                         "(default h100-sxm)");
  c.plan_cmd->add_option("--gpus", c.plan_gpus, "Accelerators to plan for (with --explain: the config's pp and tp, "
                                                "data parallel the rest; default its mesh)");
  c.plan_cmd->add_flag("--json", c.plan_args.json, "Machine-readable output");
}

void add_debug_and_export_commands(CLI::App& app, Commands& c) {
  c.debug_cmd = app.add_subcommand("debug", "Name the rank a hang or desync comes from, from the ranks' flight records");
  c.debug_cmd->add_option("run", c.debug_args.run, "The run folder (a running job's ranks are asked for fresh records)")
      ->required();
  c.debug_cmd->add_option("--wait", c.debug_wait, "Seconds a running job's ranks have to answer (default 10)");
  c.export_cmd = app.add_subcommand("export", "Write a checkpoint's weights as a Hugging Face model folder, or its adapters as a PEFT folder");
  c.export_cmd->add_option("path", c.export_args.path, "Checkpoint, folder of checkpoints, or run folder")->required();
  // One folder per export: a transformers model (--hf) or PEFT adapters (--peft).
  CLI::App* target = c.export_cmd->add_option_group("target", "The folder to write (one of)");
  CLI::Option* hf =
      target->add_option("--hf", c.export_args.hf, "The transformers model folder to write (must not exist or be empty)");
  c.export_peft = target->add_option("--peft", c.export_args.peft,
                                     "The checkpoint's adapters as a Hugging Face PEFT folder (adapter_model.safetensors, "
                                     "adapter_config.json)");
  target->require_option(1);
  // A PEFT folder holds the adapters apart from the model: --merge and --shard-mb shape only --hf's weights.
  c.export_cmd->add_flag("--merge", c.export_args.merge, "With --hf: fold the checkpoint's adapters into the weights")
      ->needs(hf);
  c.export_cmd->add_option("--dtype", c.export_args.dtype, "float32 (default), bfloat16 or float16")
      ->check(CLI::IsMember({"float32", "bfloat16", "float16"}));
  c.export_cmd->add_option("--shard-mb", c.export_shard_mb,
                           "Largest model-*.safetensors shard, in MB (default 5000); past it, model.safetensors.index.json lists the shards")
      ->excludes(c.export_peft);
}

void define(CLI::App& app, Commands& c) {
  app.require_subcommand(0, 1);
  app.add_flag("-v,--verbose", c.verbose, "Debug logging, and where in plait's source an error was raised");
  app.add_flag("--version", c.version, "plait, LibTorch and plugin API versions, CUDA and the communicators here");
  c.run_cmd = app.add_subcommand("run", "Train a model as a config describes");
  add_run_options(c.run_cmd, c.run, c.run_raw);
  c.run_cmd->add_flag("-v,--verbose", c.verbose, "Debug logging");
  add_check_command(app, c);
  add_inspect_commands(app, c);
  add_schedule_and_checkpoint_commands(app, c);
  add_compare_commands(app, c);
  add_plan_command(app, c);
  add_debug_and_export_commands(app, c);
}

// The subcommands whose flags are read into their arguments here (ranges, units) before
// they run; -1 when none of them was chosen.
int dispatch_with_flags(Commands& c) {
  if (*c.validate_cmd) {
    c.validate_raw.into(c.validate);
    const auto gpus = integer_flag("--gpus", c.validate_gpus, 1, int64_t{1} << 24);
    PLAIT_CHECK(!gpus || c.validate_hardware, plait::concat("--gpus ", *gpus, " says the ranks of a machine, and there is no --hardware"),
                "plait config validate CONFIG --hardware h100-sxm --gpus N checks it for N of that machine's accelerators");
    if (c.validate_hardware) return config_validate_for_machine(c.validate, *c.validate_hardware, gpus);
    return config_validate(c.validate);
  }
  if (*c.verify_cmd) {
    c.verify_args.combos = integer_flag("--combos", c.verify_combos, 0, 100000).value_or(0);
    c.verify_args.seed = static_cast<uint64_t>(integer_flag("--seed", c.verify_seed, 0, int64_t{1} << 53).value_or(1));
    c.verify_args.loss_gap = fraction_flag("--loss-gap", c.verify_loss_gap).value_or(c.verify_args.loss_gap);
    return verify(c.verify_args);
  }
  if (*c.sweep_cmd) {
    c.sweep_args.steps = integer_flag("--steps", c.sweep_steps, 1, int64_t{1} << 53);
    c.sweep_args.repeats = static_cast<int>(integer_flag("--repeats", c.sweep_repeats, 1, 1000).value_or(1));
    return sweep(c.sweep_args);
  }
  if (*c.plan_cmd) {
    c.plan_args.gpus = integer_flag("--gpus", c.plan_gpus, 1, int64_t{1} << 24);
    c.plan_args.seq_len = integer_flag("--seq-len", c.plan_seq_len, 1, int64_t{1} << 24);
    c.plan_args.global_batch = integer_flag("--global-batch", c.plan_global_batch, 1, int64_t{1} << 30);
    c.plan_args.top = integer_flag("--top", c.plan_top, 1, 10000);
    if (c.plan_tokens) c.plan_args.tokens = plait::token_count("--tokens", *c.plan_tokens);
    c.plan_args.scale = integer_list_flag("--scale", c.plan_scale, 1, int64_t{1} << 24);
    return plan(c.plan_args);
  }
  if (*c.debug_cmd) {
    c.debug_args.wait_s = positive_number_flag("--wait", c.debug_wait).value_or(c.debug_args.wait_s);
    return debug_run(c.debug_args);
  }
  if (*c.export_cmd) {
    c.export_args.peft_folder = c.export_peft->count() > 0;
    if (auto mb = positive_number_flag("--shard-mb", c.export_shard_mb)) {
      // Bytes are counted in int64: past a petabyte a shard size would overflow (and one file holds any model).
      PLAIT_CHECK(*mb <= 1e9, plait::concat("--shard-mb ", *c.export_shard_mb, ": at most 1000000000 (a petabyte)"),
                  "a shard larger than the model is one file anyway; leave --shard-mb out for the default");
      c.export_args.shard_mb = *mb;
    }
    return export_hf(c.export_args);
  }
  return -1;
}

// Runs the chosen subcommand; plait::Error propagates to main.
int dispatch(CLI::App& app, Commands& c) {
  c.run.verbose = c.validate.verbose = c.check.run.verbose = c.verbose;
  plait::configure_logging("", c.verbose);  // -v shows the checks' debug lines too
  if (c.version) return version();
  if (*c.run_cmd) {
    c.run_raw.into(c.run);
    return run(c.run);
  }
  if (*c.check_cmd) {
    c.check_raw.into(c.check.run);
    c.check.tolerance = fraction_flag("--tolerance", c.tolerance);
    return check(c.check);
  }
  if (*c.new_plugin_cmd) return new_plugin(c.new_plugin_args);
  if (*c.plugins_cmd) return plugins(c.plugins);
  if (*c.models_cmd) return models();
  if (*c.bundles_cmd) return bundles(c.bundles);
  if (*c.show_cmd) return config_show(c.show);
  if (*c.schedule_cmd) return schedule_show(c.schedule);
  if (*c.inspect_ckpt_cmd) return checkpoint_inspect(c.inspect_ckpt);
  if (*c.verify_ckpt_cmd) return checkpoint_verify(c.verify_ckpt);
  if (*c.diff_ckpt_cmd) return checkpoint_diff(c.diff_ckpt);
  if (*c.compare_cmd) return compare(c.compare_args);
  if (const int code = dispatch_with_flags(c); code != -1) return code;
  std::cout << app.help();
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  // A file-size limit (ulimit -f) fails the write that meets it, which plait reports naming
  // the file and cleans up after, instead of killing the process without a word.
  ::signal(SIGXFSZ, SIG_IGN);
  plait::request_reproducible_blas();  // before any product, in this process and the ranks it starts
  CLI::App app{"plait: a training runtime in which every parallelism strategy is a plugin"};
  Commands commands;
  define(app, commands);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // CLI11's own exit codes (105-114) mean nothing to a user: every command line plait
    // cannot read exits 2, in plait's words, with where to look.
    return usage_error(app, usage_problem(e, app));
  }
  try {
    return dispatch(app, commands);
  } catch (const plait::StoppedAsAsked& stop) {
    std::cout << "plait " << app.get_subcommands().front()->get_name() << " stopped as asked (signal " << stop.signal
              << ", " << strsignal(stop.signal) << "): " << stop.what << " was stopped too\n";
    return 128 + stop.signal;
  } catch (const plait::Error& e) {
    return report(e.what(), e.hint(), e.origin(), commands.verbose);
  } catch (const c10::Error& e) {  // LibTorch's own, with plait's words around its first line
    return report(plait::concat("LibTorch failed: ", plait::exception_first_line(e)),
                  "if the config is valid, this is a plait bug: please report it with the command and its log", "",
                  commands.verbose);
  } catch (const std::exception& e) {
    return report(plait::concat("plait failed unexpectedly: ", e.what()),
                  "this is a plait bug: please report it with the command and its log", "", commands.verbose);
  }
}
