#include "output/run_status.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <utility>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include <nlohmann/json.hpp>

#include "plait/sdk/error.hpp"
#include "output/run_folder.hpp"

namespace plait {
namespace fs = std::filesystem;

namespace {
std::atomic<int64_t> g_last_step{0};
}

int64_t last_step_ended() { return g_last_step.load(); }

namespace {
std::atomic<bool> g_every_step{false};
}  // namespace

void write_every_step_from_now() { g_every_step.store(true); }

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

namespace {

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

// A writer that said the run is under way, and is no longer there to finish it.
bool writer_gone(const RunStatusRecord& r) {
  const bool under_way = !r.state.empty() && !is_final_state(r.state);
  if (!under_way || r.pid <= 0 || r.host.empty() || r.host != host_name()) return false;
  return ::kill(static_cast<pid_t>(r.pid), 0) != 0 && errno == ESRCH;
}

}  // namespace

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
    r.host = j.value("host", "");
    r.restarts = j.value("restarts", int64_t{0});
    if (j.contains("faults") && j.at("faults").is_array()) r.faults = j.at("faults").get<std::vector<std::string>>();
    if (writer_gone(r)) {
      r.reason = concat("its process (pid ", r.pid, ") ended without saying how, at step ", r.step,
                        ": it crashed or was killed (its log and flight record say more)");
      r.state = "failed";
    }
    return r;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

bool is_final_state(const std::string& state) {
  return state == "finished" || state == "stopped" || state == "failed";
}

namespace {
// A process that has said its run failed, stopped or is stopping has said how it ends: a
// stop notice's thread writes it while the main thread may still finish a step and write
// "running". Such a later write only carries its step into the said record; a final state
// (the launcher's, once its ranks stopped) replaces "stopping".
std::mutex g_status_mutex;
std::map<std::string, RunStatusRecord> g_said_end;
std::map<std::string, int64_t> g_running_step;  // the highest step written as "running", by folder

bool said_end(const std::string& folder) {
  const std::lock_guard<std::mutex> lock(g_status_mutex);
  return g_said_end.count(folder) != 0;
}

bool ends(const std::string& state) { return state == "stopping" || is_final_state(state); }

}  // namespace

void write_run_status(const std::string& folder, RunStatusRecord record) {
  const std::lock_guard<std::mutex> lock(g_status_mutex);
  auto said = g_said_end.find(folder);
  // What follows a stop: how the job ended, or its restart (whose ranks run on).
  const bool moves_on = said != g_said_end.end() && said->second.state == "stopping" &&
                        (is_final_state(record.state) || record.state == "restarting");
  const bool said_before = said != g_said_end.end() && !moves_on;
  if (moves_on) g_said_end.erase(said);
  if (said_before) {
    if (record.step <= said->second.step) return;
    said->second.step = record.step;
    record = said->second;
  } else if (ends(record.state)) {
    g_said_end[folder] = record;
  } else if (record.state == "running") {
    int64_t& highest = g_running_step[folder];
    if (g_every_step.load() && record.step < highest) return;  // the main thread got further than a stop notice's thread
    highest = record.step;
  }
  record.updated = utc_now();
  record.pid = ::getpid();
  record.host = host_name();
  const nlohmann::ordered_json j = {
      {"state", record.state},     {"reason", record.reason.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(record.reason)},
      {"step", record.step},       {"steps", record.steps},
      {"started", record.started}, {"updated", record.updated},
      {"pid", record.pid},         {"host", record.host},       {"plait", PLAIT_VERSION},
      {"restarts", record.restarts},
  };
  nlohmann::ordered_json out = j;
  if (!record.faults.empty()) out["faults"] = record.faults;
  write_file_atomically((fs::path(folder) / "status.json").string(), out.dump(2) + "\n");
}

RunStatus::RunStatus(std::string folder, int64_t steps) : folder_(std::move(folder)) {
  record_.steps = steps;
  record_.started = utc_now();
  if (auto earlier = read_run_status(folder_)) {
    if (!earlier->started.empty()) record_.started = earlier->started;
    record_.restarts = earlier->restarts;
    record_.faults = earlier->faults;
  }
}

void RunStatus::restarting(int64_t restarts, const std::string& reason) {
  if (auto earlier = read_run_status(folder_)) record_.step = std::max(record_.step, earlier->step);
  record_.restarts = restarts;
  write("restarting", reason);
}

void RunStatus::running(int64_t step, bool now_please) {
  record_.step = step;
  // Stored before the flag is read: a stop notice's thread sets the flag before it reads
  // the step, so either it sees this step or this thread sees the flag and writes it.
  g_last_step.store(std::max(g_last_step.load(), step));
  if (first_step_hook_) std::exchange(first_step_hook_, nullptr)(step);
  const int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
  const bool due = now_please || g_every_step.load() || step >= record_.steps || now - last_write_ns_ >= 1'000'000'000;
  if (!due && !said_end(folder_)) return;
  last_write_ns_ = now;
  write("running", "");
}

// Another process (the node's first rank, under a launcher) may have written later steps.
void RunStatus::catch_up(int64_t step_ended) {
  if (auto earlier = read_run_status(folder_)) record_.step = std::max(record_.step, earlier->step);
  record_.step = std::max({record_.step, last_step_ended(), step_ended});
}

void RunStatus::finished() {
  catch_up(0);
  write("finished", "");
}

void RunStatus::failed(const std::string& reason, int64_t step_ended) {
  catch_up(step_ended);
  write("failed", reason);
}

void RunStatus::stopping(const std::string& reason) {
  catch_up(0);
  write("stopping", reason);
}

void RunStatus::stopped(const std::string& reason, int64_t step_ended) {
  catch_up(step_ended);
  write("stopped", reason);
}

void RunStatus::write(const std::string& state, const std::string& reason) {
  record_.state = state;
  record_.reason = reason;
  write_run_status(folder_, record_);
}

}  // namespace plait
