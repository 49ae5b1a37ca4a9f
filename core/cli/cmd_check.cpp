#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <boost/dll/runtime_symbol_info.hpp>

#include "equivalence/equivalence.hpp"
#include "cli/commands.hpp"
#include "plait/sdk/capabilities.hpp"
#include "plait/sdk/error.hpp"
#include "run/launch_plan.hpp"
#include "equivalence/tolerance.hpp"
#include "run/prepare.hpp"
#include "output/run_folder.hpp"
#include "util/subprocess.hpp"
#include "util/read_text.hpp"

namespace plait::cli {
namespace fs = std::filesystem;

namespace {

// The first error line a failed run printed, so that the check says why.
double run_timed(const std::vector<std::string>& argv, const fs::path& log, const std::string& what) {
  const auto start = std::chrono::steady_clock::now();
  const int code = run_command(argv, log.string());
  if (const int sig = catch_stop_signals().load(); sig != 0) {
    throw StoppedAsAsked{sig, concat("its ", what, " run in ", log.parent_path().string(), "/", what)};
  }
  if (code != 0) {
    const std::string said = first_marked_line(log, {"error: "});
    const std::string why = said.empty() ? said : said.substr(7);
    throw Error(concat("the ", what, " run failed (exit code ", code, ")", why.empty() ? "" : ": " + why),
                concat("see ", log.string()));
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// `plait run` of the config into `folder` with the check's flags, then `extra`.
std::vector<std::string> run_argv(const CheckArgs& args, const fs::path& folder, const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {boost::dll::program_location().string(), "run", args.run.config, "--out",
                                   folder.string(), "--set", "debug.dump_grads=true"};
  for (const auto& s : args.run.override_argv()) argv.push_back(s);
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

// The single-process run of the same global batch.
std::vector<std::string> reference_flags(int64_t rows) {
  std::vector<std::string> out;
  for (const std::string& s : std::vector<std::string>{"parallel.data=single", "parallel.pipeline=none", "parallel.tensor=none", "parallel.offload=none",
                        "parallel.dp=1", "parallel.pp=1", "parallel.tp=1", "data.micro_batch_size=" + std::to_string(rows)}) {
    out.push_back("--set");
    out.push_back(s);
  }
  return out;
}

int print_report(const EquivalenceReport& report) {
  std::string worst_name;
  double worst = -1.0;
  for (const auto& g : report.grads) {
    if (g.relative > worst) {
      worst = g.relative;
      worst_name = g.name;
    }
  }
  std::printf("  losses: %zu steps, worst relative difference %.3e\n", report.losses.size(), report.worst_loss());
  std::printf("  gradients after step 1: %zu parameters, worst relative difference %.3e (%s)\n", report.grads.size(),
              report.worst_grad(), worst_name.c_str());
  for (const auto& f : report.failures) std::printf("  mismatch: %s\n", f.c_str());
  std::printf("%s\n", report.passed() ? "PASS" : "FAIL");
  return report.passed() ? 0 : 1;
}

// An approximate data plugin trains another model by design: there is no equality to test.
void refuse_approximate(const PreparedRun& prep) {
  for (const auto& c : prep.config->plugins()) {
    if (c.role != "data" || !prep.registry->find(c.name)->has_capability(capability::approximate)) continue;
    throw Error(concat(c.place, ": data plugin '", c.name, "' is approximate: it trains another model than the single ",
                       "process by design, so plait check has no equality to test"),
                concat("`plait verify ", c.name, "` measures its loss gap and traffic against ddp's; `plait compare` ",
                       "sets two runs side by side"));
  }
}

}  // namespace

int check(const CheckArgs& args) {
  catch_stop_signals();  // a stop passes to the run under way, which stops as asked
  const fs::path out = args.run.out ? run_folder_of({.config = args.run.config, .out = args.run.out})
                                    : choose_run_folder("", fs::path(args.run.config).stem().string() + "-check");
  // The candidate is checked as `plait run` would check it, before anything runs.
  const LaunchRequest candidate_request{
      .config = args.run.config, .out = (out / "candidate").string(), .nproc_per_node = args.run.nproc_per_node};
  PreparedRun prep = prepare_run(args.run.config, args.run.overrides(), known_world(candidate_request));
  log_config_notes(prep);
  refuse_approximate(prep);
  plan_launch(prep, candidate_request);
  check_run_folder(out.string());
  const std::string dtype = prep.config->train().dtype;
  PLAIT_CHECK(args.tolerance || default_tolerance(dtype), concat("the equivalence check has no default tolerance for ", dtype),
              "pass --tolerance, or check in float32 or float64");
  const double tolerance = args.tolerance ? *args.tolerance : *default_tolerance(dtype);
  const int64_t rows = prep.config->data().micro_batch_size * prep.mesh.dp;
  create_run_folder(out.string());

  std::string strategy;
  for (const auto& c : prep.config->plugins()) strategy += (strategy.empty() ? "" : ", ") + c.role + "=" + c.name;
  std::cout << "equivalence of " << args.run.config << ": " << strategy << " on " << prep.world_size
            << (prep.world_size == 1 ? " rank" : " ranks") << " (dp " << prep.mesh.dp << " x pp " << prep.mesh.pp
            << " x tp " << prep.mesh.tp << ") against the single-process run with " << rows << " rows per batch; "
            << dtype << ", tolerance " << tolerance << "\n"
            << std::flush;
  std::vector<std::string> candidate_extra;
  if (args.run.nproc_per_node) candidate_extra = {"--nproc-per-node", std::to_string(*args.run.nproc_per_node)};
  const double t_candidate = run_timed(run_argv(args, out / "candidate", candidate_extra), out / "candidate.log", "candidate");
  std::printf("  candidate: %s (%.1f s)\n", (out / "candidate").c_str(), t_candidate);
  const double t_reference = run_timed(run_argv(args, out / "reference", reference_flags(rows)), out / "reference.log",
                                       "reference");
  std::printf("  reference: %s (%.1f s)\n", (out / "reference").c_str(), t_reference);
  const EquivalenceReport report = equivalence_of((out / "candidate").string(), (out / "reference").string(), tolerance);
  // A stop asked for while the runs were compared: no verdict is given for a check stopped.
  if (const int sig = catch_stop_signals().load(); sig != 0) {
    throw StoppedAsAsked{sig, concat("its comparison of the runs in ", out.string())};
  }
  write_file_atomically((out / "equivalence.json").string(), report.to_json());
  return print_report(report);
}

}  // namespace plait::cli
