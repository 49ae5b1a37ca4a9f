#include "run/run_status.hpp"

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "run/run_folder.hpp"

namespace plait {
namespace fs = std::filesystem;

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::optional<RunStatusRecord> read_run_status(const std::string& folder) {
  std::ifstream in(fs::path(folder) / "status.json");
  if (!in) return std::nullopt;
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    RunStatusRecord r;
    r.state = j.value("state", "");
    if (j.contains("reason") && j.at("reason").is_string()) r.reason = j.at("reason").get<std::string>();
    r.step = j.value("step", int64_t{0});
    r.steps = j.value("steps", int64_t{0});
    r.started = j.value("started", "");
    r.updated = j.value("updated", "");
    r.pid = j.value("pid", int64_t{0});
    return r;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void write_run_status(const std::string& folder, RunStatusRecord record) {
  record.updated = utc_now();
  record.pid = ::getpid();
  const nlohmann::ordered_json j = {
      {"state", record.state},     {"reason", record.reason.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(record.reason)},
      {"step", record.step},       {"steps", record.steps},
      {"started", record.started}, {"updated", record.updated},
      {"pid", record.pid},         {"plait", PLAIT_VERSION},
  };
  write_file_atomically((fs::path(folder) / "status.json").string(), j.dump(2) + "\n");
}

RunStatus::RunStatus(std::string folder, int64_t steps) : folder_(std::move(folder)) {
  record_.steps = steps;
  record_.started = utc_now();
  if (auto earlier = read_run_status(folder_); earlier && !earlier->started.empty()) record_.started = earlier->started;
}

void RunStatus::running(int64_t step, bool now_please) {
  record_.step = step;
  const int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
  if (!now_please && step < record_.steps && now - last_write_ns_ < 1'000'000'000) return;
  last_write_ns_ = now;
  write("running", "");
}

// Another process (the node's first rank, under a launcher) may have written later steps.
void RunStatus::finished() {
  if (auto earlier = read_run_status(folder_)) record_.step = std::max(record_.step, earlier->step);
  write("finished", "");
}

void RunStatus::failed(const std::string& reason) {
  if (auto earlier = read_run_status(folder_)) record_.step = std::max(record_.step, earlier->step);
  write("failed", reason);
}

void RunStatus::write(const std::string& state, const std::string& reason) {
  record_.state = state;
  record_.reason = reason;
  write_run_status(folder_, record_);
}

}  // namespace plait
