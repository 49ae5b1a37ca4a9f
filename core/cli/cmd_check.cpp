#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include <boost/dll/runtime_symbol_info.hpp>

#include "check/equivalence.hpp"
#include "cli/commands.hpp"
#include "plait/sdk/error.hpp"
#include "run/prepare.hpp"
#include "run/run_folder.hpp"
#include "run/subprocess.hpp"

namespace plait::cli {
namespace fs = std::filesystem;

namespace {

double run_timed(const std::vector<std::string>& argv, const fs::path& log, const std::string& what) {
  const auto start = std::chrono::steady_clock::now();
  const int code = run_command(argv, log.string());
  PLAIT_CHECK(code == 0, concat("the ", what, " run failed (exit code ", code, ")"), concat("see ", log.string()));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int check(const CheckArgs& args) {
  std::vector<std::string> sets = args.run.sets;
  if (args.run.steps) sets.push_back(concat("train.steps=", *args.run.steps));
  const int known_world = args.run.nproc_per_node.value_or(0);
  PreparedRun prep = prepare_run(args.run.config, sets, known_world);  // refuse a bad config before running anything
  const std::string dtype = prep.config->table("train").get<std::string>("dtype");
  PLAIT_CHECK(args.tolerance || dtype != "bfloat16", "the equivalence check has no default tolerance for bfloat16",
              "pass --tolerance, or check in float32 or float64");
  const double tolerance = args.tolerance.value_or(dtype == "float64" ? 1e-10 : 1e-5);
  const int64_t rows = prep.config->table("data").get<int64_t>("micro_batch_size") * prep.mesh.dp;

  const std::string out = args.run.out.empty()
                              ? choose_run_folder("", fs::path(args.run.config).stem().string() + "-check")
                              : args.run.out;
  create_run_folder(out);
  const std::string self = boost::dll::program_location().string();
  auto command = [&](const std::string& folder, const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {self, "run", args.run.config, "--out", (fs::path(out) / folder).string(),
                                     "--set", "debug.dump_grads=true"};
    for (const auto& s : sets) {
      argv.push_back("--set");
      argv.push_back(s);
    }
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  };
  std::vector<std::string> candidate_extra;
  if (args.run.nproc_per_node) candidate_extra = {"--nproc-per-node", std::to_string(*args.run.nproc_per_node)};
  std::vector<std::string> reference_extra;
  for (const char* s : {"parallel.data=none", "parallel.pipeline=none", "parallel.tensor=none", "parallel.offload=none",
                        "parallel.dp=1", "parallel.pp=1", "parallel.tp=1"}) {
    reference_extra.push_back("--set");
    reference_extra.push_back(s);
  }
  reference_extra.push_back("--set");
  reference_extra.push_back(concat("data.micro_batch_size=", rows));

  std::string strategy;
  for (const auto& c : prep.config->plugins()) strategy += (strategy.empty() ? "" : ", ") + c.role + "=" + c.name;
  std::cout << "equivalence of " << args.run.config << ": " << strategy << " on " << prep.world_size
            << (prep.world_size == 1 ? " rank" : " ranks") << " (dp " << prep.mesh.dp << " x pp " << prep.mesh.pp
            << " x tp " << prep.mesh.tp << ") against the single-process run with " << rows << " rows per batch; "
            << dtype << ", tolerance " << tolerance << "\n"
            << std::flush;
  const double t_candidate = run_timed(command("candidate", candidate_extra), fs::path(out) / "candidate.log", "candidate");
  std::printf("  candidate: %s (%.1f s)\n", (fs::path(out) / "candidate").c_str(), t_candidate);
  const double t_reference = run_timed(command("reference", reference_extra), fs::path(out) / "reference.log", "reference");
  std::printf("  reference: %s (%.1f s)\n", (fs::path(out) / "reference").c_str(), t_reference);

  const EquivalenceReport report =
      compare_runs((fs::path(out) / "candidate").string(), (fs::path(out) / "reference").string(), tolerance);
  write_file_atomically((fs::path(out) / "equivalence.json").string(), report.to_json());
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

}  // namespace plait::cli
