#include "plan/measured_run.hpp"

#include <filesystem>
#include <vector>

#include "compare/comparison.hpp"
#include "config/config_loader.hpp"
#include "metrics/metrics_records.hpp"
#include "plait/sdk/error.hpp"

namespace plait {
namespace {

namespace fs = std::filesystem;

// "time.comm_exposed.dp.all_reduce_ms" -> "comm.dp"; the core's own (world) and any other
// axis -> "comm.other".
std::string comm_axis(const std::string& key) {
  const std::string rest = key.substr(std::string("time.comm_exposed.").size());
  const std::string axis = rest.substr(0, rest.find('.'));
  return axis == "dp" || axis == "tp" || axis == "pp" ? "comm." + axis : "comm.other";
}

// One step's figures by name: each phase, each axis's exposed communication.
std::map<std::string, double> step_phases(const nlohmann::json& record) {
  std::map<std::string, double> out;
  for (const auto& [key, value] : record.items()) {
    if (key.rfind("time.", 0) != 0 || key.size() < 8 || key.substr(key.size() - 3) != "_ms") continue;
    if (key.rfind("time.comm_exposed.", 0) == 0) {
      out[comm_axis(key)] += value.get<double>();
    } else if (key != "time.comm_exposed_ms") {
      out[key.substr(5, key.size() - 8)] = value.get<double>();
    }
  }
  return out;
}

// The run's device as its lock file records it ([train] device; the schema's "cpu" when
// an older lock left it out).
std::string locked_device(const std::string& lock) {
  const LoadedConfig loaded = load_config(lock, {});
  const ConfigEntry* e = loaded.tree.find("train", "device");
  return e != nullptr && e->value.type == ConfigValue::Type::string ? e->value.string : "cpu";
}

std::string device_words(const std::string& device) { return device == "cuda" ? "GPUs (cuda)" : "CPU ranks (cpu)"; }

}  // namespace

std::string measured_elsewhere(const Hardware& hw, const std::vector<std::string>& devices) {
  int64_t elsewhere = 0;
  std::string device;
  for (const std::string& d : devices) {
    if (d == hw.device) continue;
    ++elsewhere;
    device = d;
  }
  if (elsewhere == 0) return "";
  const std::string which = static_cast<std::size_t>(elsewhere) == devices.size()
                                ? (devices.size() == 1 ? std::string("the run was") : concat("the ", elsewhere, " runs were"))
                                : concat(elsewhere, " of the ", devices.size(), " runs were");
  const std::string hint = device == "cpu" ? "plan with --hardware cpu-local (`plait plan --calibrate` measures this machine)"
                                           : "plan with the hardware file of the machine they ran on";
  return concat(which, " measured on ", device_words(device), " ([train] device in config.lock.toml), but ", hw.id,
                " describes ", device_words(hw.device), ": the measured figures are another machine's than the "
                "predicted ones, so their ratios say nothing of the planner; ", hint);
}

MeasuredRun read_measured_run(const std::string& folder) {
  std::error_code ec;
  PLAIT_CHECK(fs::is_regular_file(fs::path(folder) / "config.lock.toml", ec),
              concat("--against ", folder, ": not a run folder (it has no config.lock.toml)"),
              "name the folder `plait run` trained into (runs/<name>)");
  MeasuredRun m;
  m.folder = folder;
  m.config = (fs::path(folder) / "config.lock.toml").string();
  m.device = locked_device(m.config);
  std::vector<nlohmann::json> records = read_metrics_records(folder);
  if (records.size() > 1) records.erase(records.begin());
  PLAIT_CHECK(records.front().contains("time.forward_ms"),
              concat("--against ", folder, ": the run timed no phases ([train] phase_timing = false)"),
              "run it again with phase timing on (the default) to compare it phase by phase");
  std::map<std::string, std::vector<double>> phases;
  std::vector<double> step_ms, tokens_per_s;
  for (const nlohmann::json& r : records) {
    for (const auto& [name, ms] : step_phases(r)) phases[name].push_back(ms);
    step_ms.push_back(r.at("step_ms").get<double>());
    tokens_per_s.push_back(r.at("tokens_per_s").get<double>());
  }
  m.steps = static_cast<int64_t>(records.size());
  for (auto& [name, values] : phases) {
    values.resize(records.size(), 0.0);  // a step without an axis's communication had none
    m.phase_ms[name] = compare::spread_of(values).median;
  }
  m.step_ms = compare::spread_of(step_ms).median;
  m.tokens_per_s = compare::spread_of(tokens_per_s).median;
  const nlohmann::json& last = records.back();
  m.param_bytes = last.at("param_bytes").get<int64_t>();
  m.grad_bytes = last.at("grad_bytes").get<int64_t>();
  m.optimizer_bytes = last.at("optimizer_bytes").get<int64_t>();
  m.activation_bytes = last.at("activation_bytes").get<int64_t>();
  m.peak_mem_bytes = last.at("peak_mem_bytes").get<int64_t>();
  return m;
}

}  // namespace plait
