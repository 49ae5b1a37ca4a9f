#pragma once
// The subcommands of the plait CLI. Each returns the process exit code; errors are
// thrown as plait::Error and printed by main.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace plait::cli {

// What `plait run` (and `plait config validate`, which checks the same) takes.
struct RunArgs {
  std::string config;
  std::vector<std::string> sets;
  std::optional<int64_t> steps;
  std::optional<std::string> out;  // absent: runs/<config>-<time>
  std::optional<std::string> resume;  // --resume PATH: checkpoint.resume_from
  bool allow_batch_change = false;    // checkpoint.allow_batch_change
  bool verbose = false;
  // Launch (cluster) flags; absent: one node with as many ranks as the mesh needs.
  std::optional<int> nnodes;
  std::optional<int> node_rank;
  std::optional<int> nproc_per_node;
  std::optional<std::string> master_addr;
  std::optional<int> master_port;
  std::optional<int> max_restarts;  // distributed.max_restarts

  // The --set flags with --steps (and the other flags that set config keys) as more.
  std::vector<std::string> overrides() const;
  // The same as another `plait run`'s arguments: "--set" before each assignment, a value
  // flag ("--steps=4") as itself.
  std::vector<std::string> override_argv() const;
};
int run(const RunArgs& args);
int config_validate(const RunArgs& args);

struct PluginsArgs {
  bool json = false;
};
int plugins(const PluginsArgs& args);

int models();

struct BundlesArgs {
  bool json = false;
  std::string config;  // optional: adds its [bundles] paths
};
int bundles(const BundlesArgs& args);

// plait --version: plait, LibTorch, the plugin API, CUDA and the communicators here.
int version();

struct ConfigArgs {
  std::string config;
  std::vector<std::string> sets;
  bool resolved = false;
  bool provenance = false;
};
int config_show(const ConfigArgs& args);

struct CheckArgs {
  RunArgs run;                      // the candidate run as `plait run` would take it
  std::optional<double> tolerance;  // default: 1e-10 for float64, 1e-5 for float32
};
int check(const CheckArgs& args);

// plait verify PLUGIN: the plugin's library, schema, equivalence with the single
// process composed with the other kinds, checkpoints, and its capabilities' honesty.
struct VerifyArgs {
  std::string plugin;                // a name, or a path to its library
  bool quick = false;                // a few cases of each group (under 3 minutes here)
  std::optional<std::string> json;   // also write the report here
  std::optional<std::string> out;    // the verify folder (default runs/verify-<name>-<time>)
  int64_t combos = 0;                // random valid combinations checked after the cases
  uint64_t seed = 1;
  double loss_gap = 0.05;            // an approximate plugin's final loss may exceed ddp's by this fraction
  std::vector<std::string> sets;     // the plugin's options (and any table.key=value) for every case
};
int verify(const VerifyArgs& args);

// plait new plugin NAME --kind KIND [--from sharding] [--dir D]
struct NewPluginArgs {
  std::string name, kind;
  std::optional<std::string> from, dir;
};
int new_plugin(const NewPluginArgs& args);

struct ScheduleArgs {
  std::string config;
  std::vector<std::string> sets;
  std::string trace;  // Chrome trace path, or empty
};
int schedule_show(const ScheduleArgs& args);

// plait checkpoint inspect|verify PATH: a checkpoint folder, a folder of checkpoints
// (its latest) or a run folder (checkpoints/latest).
struct CheckpointArgs {
  std::string path;
};
int checkpoint_inspect(const CheckpointArgs& args);
int checkpoint_verify(const CheckpointArgs& args);
// plait checkpoint diff A B: whether two checkpoints hold the same state (every tensor
// whole, whatever mesh saved them); exit 0 when they do, 3 with the first difference.
struct CheckpointDiffArgs {
  std::string a, b;
};
int checkpoint_diff(const CheckpointDiffArgs& args);

// plait export PATH --hf DIR [--merge] [--dtype bfloat16] [--shard-mb N]: a checkpoint's
// weights as a Hugging Face folder (config.json for GPT2LMHeadModel / LlamaForCausalLM,
// safetensors), adapters folded in with --merge; plait export PATH --peft DIR: its
// adapters as a Hugging Face PEFT folder.
struct ExportArgs {
  std::string path, hf, peft;
  bool peft_folder = false;  // --peft given: the adapters; else --hf
  bool merge = false;
  std::string dtype = "float32";
  double shard_mb = 5000.0;
};
int export_hf(const ExportArgs& args);

// plait compare RUN... [--markdown FILE] [--html FILE]: runs side by side (config differences with
// their origins, loss agreement, speed and its noise, step-time breakdown, memory,
// communication).
struct CompareArgs {
  std::vector<std::string> runs;  // run folders, or sweep folders holding them
  std::string markdown;           // also write the report as Markdown here
  std::string html;               // ... and as one self-contained HTML page here
};
int compare(const CompareArgs& args);

// plait sweep CONFIG --vary KEY=V1,V2 [--vary ...] [--repeats R] [--steps N]: every
// combination checked first (the refused ones skipped with their reason), each valid one
// run R times (repeats interleaved) into its own folder under one sweep folder, then
// the compare report of the runs that finished. Ctrl-C stops after the running one.
struct SweepArgs {
  std::string config;
  std::vector<std::string> vary;
  std::vector<std::string> sets;  // --set, applied to every run
  int repeats = 1;
  std::optional<int64_t> steps;
  std::optional<std::string> out;  // the sweep folder; default runs/sweep-<config>-<time>
};
int sweep(const SweepArgs& args);

// plait debug RUN: what the ranks' flight records say went wrong between them (a hang's
// culprit, a desync, a straggler); the ranks of a job still running are asked first.
struct DebugArgs {
  std::string run;
  double wait_s = 10.0;  // how long a running job's ranks have to answer
};
int debug_run(const DebugArgs& args);

// plait plan --model NAME|CONFIG --gpus N [--hardware H] [--seq-len S] [--global-batch B]
// [--top K] [--json] [--write FILE [--bundle]] [--tokens T] [--scale N1,N2,...]: every strategy
// combination of the model on N accelerators, what does not fit or is refused set aside
// with why, the rest ranked by tokens/s per accelerator; T tokens priced; the best plan
// at each accelerator count of --scale.
// plait plan --explain CONFIG [--hardware H] [--gpus N] [--against RUN] [--json]: one
// config's predicted memory per accelerator and step time by phase, beside a run's own.
// plait plan --against SWEEP [--hardware H] [--json]: a folder of runs ranked by their
// predicted speed beside their measured one; the first choice against the fastest.
// plait plan --calibrate [--write FILE]: this machine measured as the hardware cpu-local.
struct PlanArgs {
  std::string explain;              // the config to explain
  std::string against;              // a run to set beside it (its config.lock.toml when there is no --explain),
                                    // or a folder of runs to rank
  std::string model;                // the search's: "llama-70b" (family-size) or a config
  std::vector<std::string> sets;
  std::string hardware = "h100-sxm";  // a shipped machine's name or a hardware file
  std::optional<int64_t> gpus;      // explain: keeps pp and tp, data parallel takes the rest
  std::optional<int64_t> seq_len, global_batch;  // global batch in sequences
  std::optional<int64_t> top;       // the search's plans to list (5 unless given)
  std::optional<std::string> write;  // the best plan as a config
  bool bundle = false;               // --write the plan's own choices as a bundle instead
  std::optional<double> tokens;      // price a run of this many tokens
  std::vector<int64_t> scale;        // search again at each of these accelerator counts
  bool calibrate = false;            // measure this machine into cpu-local (or --write's file)
  bool measure = false;              // explain: build and step each pipeline rank's first on the meta device
  bool json = false;
};
int plan(const PlanArgs& args);

}  // namespace plait::cli
