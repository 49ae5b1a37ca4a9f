// plait plan: the fastest strategy that fits a model on N accelerators (--model), or one
// config's predicted memory per accelerator and step time by phase (--explain), from the
// plugins' own cost models and the core's.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "cli/commands.hpp"
#include "cli/plan_report.hpp"
#include "config/config_loader.hpp"
#include "config/config_tree.hpp"
#include "compare/run_record.hpp"
#include "model/model_spec.hpp"
#include "plait/sdk/error.hpp"
#include "util/writable_folder.hpp"
#include "plan/calibrate.hpp"
#include "plan/plan_inputs.hpp"
#include "plan/plan_search.hpp"
#include "plan/run_cost.hpp"
#include "plan/run_ranking.hpp"
#include "run/prepare.hpp"
#include "output/run_folder.hpp"
#include "util/search_path.hpp"
#include "util/short_number.hpp"

namespace plait::cli {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kDefaultGlobalBatch = 512;

// A mesh degree as the config gives it (1 where it gives none), with its place.
struct Degree {
  int64_t value = 1;
  std::string place;
};

Degree degree(const ConfigTree& tree, const char* axis) {
  const ConfigEntry* e = tree.find("parallel", axis);
  if (e == nullptr || e->value.type != ConfigValue::Type::integer) return {};  // the schema's 1, or its refusal later
  return {e->value.integer, e->source.describe()};
}

// --gpus N keeps the config's pp and tp and gives data parallel the rest, whatever its dp
// says (a number, or -1: the rest of the world). Read from the config as written, so that
// nothing is resolved at a mesh --gpus is about to replace.
std::vector<std::string> with_gpus(const PlanArgs& args) {
  std::vector<std::string> sets = args.sets;
  const LoadedConfig loaded = load_config(args.explain, sets);
  const Degree pp = degree(loaded.tree, "pp"), tp = degree(loaded.tree, "tp");
  if (!args.gpus) {
    for (const char* axis : {"dp", "pp", "tp"}) {
      const Degree d = degree(loaded.tree, axis);
      PLAIT_CHECK(d.value != -1, concat(d.place, ": [parallel] ", axis, " = -1 takes the rest of the world size, which "
                                        "plait plan --explain is told by --gpus"),
                  "give --gpus N, the accelerators to plan for");
    }
    return sets;
  }
  for (const auto& [axis, d] : {std::pair{"pp", pp}, std::pair{"tp", tp}}) {
    PLAIT_CHECK(d.value != -1,
                concat(d.place, ": [parallel] ", axis, " = -1 takes the rest of the world, and --gpus ", *args.gpus,
                       " gives the rest to data parallel"),
                concat("give ", axis, " a number (--set parallel.", axis, "=N) to plan it at --gpus"));
  }
  const int64_t model_ranks = pp.value * tp.value;
  PLAIT_CHECK(model_ranks >= 1 && *args.gpus % model_ranks == 0,
              concat("--gpus ", *args.gpus, ": the config's pp ", pp.value, " x tp ", tp.value, " = ", model_ranks,
                     " does not divide it"),
              concat("give a multiple of ", model_ranks, ", or change parallel.pp or parallel.tp with --set"));
  sets.push_back(derived_override(concat("--gpus ", *args.gpus), concat("parallel.dp=", *args.gpus / model_ranks)));
  return sets;
}

// What one save writes in all: the float32 weights and AdamW's two moments.
double checkpoint_bytes(const ModelSpec& model) { return 12.0 * static_cast<double>(closed_form_params(model)); }

int explain(const PlanArgs& args, const Hardware& hw) {
  PLAIT_CHECK(args.scale.empty(), "--scale belongs to the search (--model), not to --explain",
              "plait plan --model CONFIG --gpus N --scale 8,64,512 searches at each count");
  // The config says its sequence and batch: a flag for them here would be ignored, silently.
  PLAIT_CHECK(!args.seq_len && !args.global_batch,
              concat(args.seq_len ? "--seq-len" : "--global-batch",
                     " belongs to the search (--model), not to --explain: the config says its own"),
              "with --explain, --set data.seq_len=N or data.micro_batch_size=N (and train.grad_accum) change them");
  // The search's other flags: one config has no plans to list or best plan to write.
  PLAIT_CHECK(!args.top && !args.write,
              concat(args.top ? "--top" : "--write", " belongs to the search (--model), not to --explain: one config is "
                     "explained, not a list of plans"),
              "plait plan --model CONFIG --gpus N --top K --write FILE searches the plans of that config's model");
  std::optional<MeasuredRun> measured;
  if (!args.against.empty()) measured = read_measured_run(args.against);
  PlanArgs asked = args;
  if (asked.explain.empty()) asked.explain = measured->config;
  const PreparedRun run = prepare_for_machine(asked.explain, with_gpus(asked));
  const ConfigPrediction p = predict_config(run, hw);
  std::optional<RunCost> cost;
  if (args.tokens) cost = price_run(hw, p, *args.tokens, checkpoint_bytes(run.model));
  std::vector<MetaRankFigures> on_meta;
  if (args.measure) on_meta = measure_pipeline_ranks_on_meta(run);
  if (args.json) {
    nlohmann::ordered_json j = prediction_json(p, hw, asked.explain);
    if (cost) j["cost"] = cost_json(*cost);
    if (measured) j["against"] = against_json(p, hw, *measured);
    if (args.measure) j["measured_on_meta"] = meta_json(p, on_meta);
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    print_prediction(p, hw, asked.explain);
    if (cost) print_cost(*cost, "this config");
    if (measured) print_against(p, hw, *measured);
    if (args.measure) print_meta(p, on_meta);
  }
  return 0;
}

// --against a folder of runs (a sweep's): the planner's order of them beside the measured one.
int rank_against(const PlanArgs& args, const Hardware& hw) {
  PLAIT_CHECK(args.explain.empty() && args.sets.empty() && !args.gpus && !args.tokens && args.scale.empty(),
              concat("--against ", args.against, " is a folder of runs, which are ranked as they ran"),
              "drop --explain, --set, --gpus, --tokens and --scale, or name one run folder to explain");
  const RunRanking r = rank_runs(compare::expand_run_folders({args.against}), hw);
  if (args.json) {
    std::printf("%s\n", ranking_json(r, hw).dump(2).c_str());
  } else {
    print_ranking(r, hw);
  }
  return 0;
}

// The run the search starts from: a config named by its path, or the shipped pre-training
// run with a named model's family and size.
struct SearchBase {
  std::string config;
  std::vector<std::string> sets;
};

SearchBase search_base(const PlanArgs& args) {
  SearchBase base;
  std::error_code ec;
  if (args.model.size() > 5 && args.model.substr(args.model.size() - 5) == ".toml") {
    PLAIT_CHECK(fs::is_regular_file(args.model, ec), concat("--model ", args.model, ": no such config file"),
                "name a config file, or a model as family-size (gpt2-124m, llama-70b: `plait models` lists them)");
    base.config = args.model;
  } else {
    const auto dash = args.model.find('-');
    const std::string family = args.model.substr(0, dash), size = dash == std::string::npos ? "" : args.model.substr(dash + 1);
    bool known = false;
    for (const NamedSize& named : named_sizes()) known = known || (named.spec.family == family && named.spec.size == size);
    PLAIT_CHECK(known, concat("--model ", args.model, ": not a model plait knows as family-size"),
                "`plait models` lists them (gpt2-124m, llama-7b, llama-70b, ...), or name a config file (.toml)");
    base.config = (install_prefix() / "share" / "plait" / "plan" / "pretrain.toml").string();
    base.sets = {"model.family=" + family, "model.size=" + size};
  }
  // Named as the user wrote it in what the search says of it (config_loader's value flags).
  if (args.seq_len) base.sets.push_back(flag_override("--seq-len", std::to_string(*args.seq_len)));
  base.sets.insert(base.sets.end(), args.sets.begin(), args.sets.end());
  return base;
}

// What a run on the machine sets that the search leaves as the base run has it: the
// device and communicator its accelerators take, and the peak its MFU is measured
// against (the machine's, for the run's dtype).
std::vector<std::string> machine_sets(const Hardware& hw, const std::string& dtype) {
  char peak[32];
  std::snprintf(peak, sizeof(peak), "%.6g", hw.peak_tflops(dtype) * 1e12);
  return {"train.device=" + hw.device, "parallel.comm=" + hw.comm, concat("train.peak_flops=", peak)};
}

// The resolved config, every default filled in, with the machine's values over it. It was
// resolved with what runs here (plan_inputs.hpp: gloo for a GPU's nccl), so the table of a
// communicator the machine does not use is left out.
std::string config_for_machine(const ResolvedConfig& config, const Hardware& hw) {
  ConfigTree tree;
  for (const auto& [table, resolved] : config.tables()) {
    if (table == "lock" || (table == config.parallel().comm && table != hw.comm)) continue;
    for (const ResolvedEntry& e : resolved.entries) tree.set(table, e.key, {e.value, e.source});
  }
  for (const std::string& assignment : machine_sets(hw, config.train().dtype)) apply_override(tree, assignment);
  return tree_to_toml(tree, false);
}

// The best plan as a config file of its own, for the machine it was planned on.
void write_best(const PlanArgs& args, const SearchBase& base, const PlanSearchResult& r, const Hardware& hw) {
  PLAIT_CHECK(!r.fitting.empty(), concat("--write ", *args.write, ": no plan fits, so none is written"),
              "the reasons are listed above; try more accelerators (--gpus) or a smaller global batch");
  const PreparedRun prepared = prepare_for_machine(base.config, base.sets);
  const ResolvedConfig config = candidate_config(prepared.loaded.tree, r.fitting.front().candidate, *prepared.registry);
  const ConfigPrediction& p = *r.fitting.front().prediction;
  char figures[96];
  std::snprintf(figures, sizeof(figures), "%s tokens/s per accelerator, MFU %.1f%%", rate_text(p.tokens_per_s_per_gpu).c_str(),
                100.0 * p.mfu);
  const std::string header = concat("# plait plan: the best of ", r.candidates, " candidates for ", r.model.family, " ",
                                    r.model.size, " on ", p.gpus(), " x ", hw.id, ", predicted ", figures, "\n# ",
                                    r.fitting.front().candidate.plugins, "\n\n");
  if (!args.bundle) {
    write_file_atomically(*args.write, header + config_for_machine(config, hw));
    return;
  }
  // A bundle holds the plan's own choices only (the mesh, the plugins and their options,
  // checkpointing, the batch split), for configs of this model to extend.
  ConfigTree choices;
  for (const std::string& assignment : r.fitting.front().candidate.sets) apply_override(choices, assignment);
  const std::string about = concat("# ", r.model.family, " ", r.model.size, " on ", p.gpus(), " x ", hw.id, ": ",
                                   r.fitting.front().candidate.plugins, " (plait plan's best, ", figures, ")\n");
  write_file_atomically(*args.write, about + tree_to_toml(choices, false));
}

// The best plan at each of --scale's accelerator counts, priced with --tokens.
std::vector<ScaleRow> scale_rows(const PlanArgs& args, const SearchBase& base, const Hardware& hw,
                                 const SearchLimits& limits) {
  std::vector<ScaleRow> rows;
  for (const int64_t gpus : args.scale) {
    SearchLimits at = limits;
    at.gpus = gpus;
    PlanSearchResult r = search_plans(base.config, base.sets, hw, at);
    ScaleRow row{gpus, r.candidates, std::nullopt, std::nullopt};
    if (!r.fitting.empty()) {
      row.best = std::move(r.fitting.front());
      if (args.tokens) row.cost = price_run(hw, *row.best->prediction, *args.tokens, checkpoint_bytes(r.model));
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

int search(const PlanArgs& args, const Hardware& hw) {
  PLAIT_CHECK(args.gpus.has_value(), "plait plan --model needs --gpus N: the accelerators to plan for",
              "e.g. plait plan --model llama-70b --gpus 1024 --hardware h100-sxm");
  if (args.write) {
    std::error_code ec;
    PLAIT_CHECK(!fs::exists(*args.write, ec), concat("--write ", *args.write, ": the file exists"),
                "name a new file; plait plan does not replace one");
    check_file_writable(*args.write, "--write");  // before the search, not after it
  }
  const SearchBase base = search_base(args);
  SearchLimits limits;
  limits.gpus = *args.gpus;
  limits.gpus_per_node = hw.gpus_per_node;
  limits.global_batch = args.global_batch.value_or(kDefaultGlobalBatch);
  limits.offload = true;
  const PlanSearchResult r = search_plans(base.config, base.sets, hw, limits);
  std::optional<RunCost> cost;
  if (args.tokens && !r.fitting.empty()) {
    cost = price_run(hw, *r.fitting.front().prediction, *args.tokens, checkpoint_bytes(r.model));
  }
  const std::vector<ScaleRow> scale = scale_rows(args, base, hw, limits);
  if (args.json) {
    nlohmann::ordered_json j = search_json(r, hw, *args.gpus, args.top.value_or(5));
    if (cost) j["cost"] = cost_json(*cost);
    if (!scale.empty()) j["scale"] = scale_json(scale, hw);
    if (args.write && !r.fitting.empty()) j["written"] = *args.write;
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    print_search(r, hw, *args.gpus, args.top.value_or(5));
    if (cost) print_cost(*cost, "plan 1");
    if (!scale.empty()) print_scale(scale);
  }
  if (args.write) {
    write_best(args, base, r, hw);
    if (!args.json) {
      std::printf("\nthe best plan is written to %s%s\n", args.write->c_str(),
                  args.bundle ? " as a bundle: a config of this model extends it (extends = [\"<that path>\"])" : "");
    }
  }
  return 0;
}

// This machine measured: cpu-local among this user's machines, or --write's new file.
int calibrate(const PlanArgs& args) {
  PLAIT_CHECK(args.explain.empty() && args.against.empty() && args.model.empty(),
              "plait plan --calibrate measures this machine and takes no --model, --explain or --against",
              "run it alone: plait plan --calibrate [--write FILE]");
  std::error_code ec;
  fs::path target;
  if (args.write) {
    PLAIT_CHECK(!fs::exists(*args.write, ec), concat("--write ", *args.write, ": the file exists"),
                "name a new file; plait plan does not replace one");
    check_file_writable(*args.write, "--write");  // before the measurement, not after it
    target = *args.write;
  } else {
    PLAIT_CHECK(!user_hardware_dir().empty(), "plait plan --calibrate: no home folder to keep cpu-local in",
                "set HOME or XDG_CONFIG_HOME, or give --write FILE");
    target = fs::path(user_hardware_dir()) / "cpu-local.toml";
    fs::create_directories(target.parent_path(), ec);
    PLAIT_CHECK(!ec, concat("cannot create ", target.parent_path().string(), ": ", ec.message()),
                "give --write FILE in a folder you can write");
  }
  const int ranks = std::max(2, static_cast<int>(std::thread::hardware_concurrency()));
  std::printf("measuring this machine: products, memory, AdamW, and gloo between %d ranks (about a minute)\n", ranks);
  std::fflush(stdout);
  const std::string text = calibrate_machine(discover_plugins(), "gloo", ranks);
  write_file_atomically(target.string(), text);
  const Hardware hw = load_hardware(target.string());  // what was written reads back whole
  std::printf("%s: fp32 %.1f GFLOP/s a rank at best, memory %.1f GB/s, all-reduce %.0f us + %.2f GB/s\n"
              "written to %s; plan with --hardware %s\n",
              hw.name.c_str(), hw.peak_fp32_tflops * 1e3, hw.memory_gbps, hw.intra_node.all_reduce.latency_us,
              hw.intra_node.all_reduce.bus_gbps, target.c_str(), args.write ? target.c_str() : "cpu-local");
  return 0;
}

}  // namespace

int plan(const PlanArgs& args) {
  if (args.calibrate) return calibrate(args);
  const bool explaining = !args.explain.empty() || !args.against.empty();
  PLAIT_CHECK(explaining != !args.model.empty(),
              explaining ? "plait plan takes --model or --explain (--against), not both"
                         : "plait plan needs --model NAME|CONFIG (a search) or --explain CONFIG",
              "`plait plan --help` lists what each takes");
  PLAIT_CHECK(!args.bundle || (args.write && !args.model.empty()),
              "--bundle says how the search's --write saves the best plan, and there is no search with --write",
              "plait plan --model NAME --gpus N --write FILE.toml --bundle");
  PLAIT_CHECK(!args.measure || !args.explain.empty(),
              "--measure builds one config's ranks on the meta device, and there is no --explain CONFIG",
              "plait plan --explain CONFIG --measure [--gpus N]");
  const Hardware hw = load_hardware(args.hardware);
  std::error_code ec;
  if (!args.against.empty() && fs::is_directory(args.against, ec) &&
      !fs::exists(fs::path(args.against) / "config.lock.toml", ec)) {
    return rank_against(args, hw);
  }
  return explaining ? explain(args, hw) : search(args, hw);
}

}  // namespace plait::cli
