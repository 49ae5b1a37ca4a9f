#pragma once
// Runs one `plait verify` case as real plait processes (check, run, config validate) in
// a folder of its own, and says whether it held, why not, and how to rerun it.
#include <string>

#include "verify/verify_plan.hpp"

namespace plait::verify {

struct Outcome {
  std::string group, title;
  std::string status;     // "pass", "fail", "skip"
  std::string detail;     // the figures, or the first reason it failed
  std::string reproduce;  // a command that reruns it
  double seconds = 0.0;
};

struct Workspace {
  std::string plait;        // the plait executable
  std::string folder;       // this verify's folder: base.toml and a folder per case
  std::string base_config;  // folder/base.toml
  double loss_gap = 0.05;   // how far above ddp's an approximate plugin's final loss may end, as a fraction
};

Outcome run_case(const Case& c, const Workspace& ws, int index);

// Whether `plait config validate` accepts the base config with `sets` (its output in `log`).
bool config_accepts(const Workspace& ws, const std::vector<std::string>& sets, const std::string& log);

// "plait check base.toml --set a --set b": how a user reruns a case by hand.
std::string command_line(const std::string& verb, const Workspace& ws, const std::vector<std::string>& sets);

}  // namespace plait::verify
