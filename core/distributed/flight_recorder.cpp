#include "distributed/flight_recorder.hpp"

#include <string_view>

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "debug/plugin_hook.hpp"

namespace plait {
namespace fs = std::filesystem;

const char* flight_state_name(FlightState state) {
  switch (state) {
    case FlightState::issued: return "issued";
    case FlightState::started: return "started";
    case FlightState::completed: return "completed";
    case FlightState::failed: return "failed";
  }
  return "?";
}

FlightRecorder::FlightRecorder(std::size_t capacity) : ring_(std::max<std::size_t>(capacity, 1)) {}

int64_t FlightRecorder::now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void FlightRecorder::add_group(const std::string& group, const std::vector<int>& ranks) {
  std::lock_guard<std::mutex> lock(mutex_);
  groups_[group] = ranks;
}

uint64_t FlightRecorder::issued(FlightOp op) {
  std::lock_guard<std::mutex> lock(mutex_);
  op.seq = op.peer < 0 ? ++collectives_[op.group]
                        : ++p2p_[{op.group, op.peer, std::string_view(op.op) == "send"}];
  op.step = step_;
  op.state = FlightState::issued;
  op.issued_us = now_us();
  const uint64_t handle = next_handle_++;
  ring_[handle % ring_.size()] = std::move(op);
  return handle;
}

void FlightRecorder::mark(uint64_t handle, FlightState state) {
  const int64_t now = now_us();
  std::lock_guard<std::mutex> lock(mutex_);
  if (handle >= next_handle_ || next_handle_ - handle > ring_.size()) return;  // no longer among the last
  FlightOp& op = ring_[handle % ring_.size()];
  if (op.state == FlightState::completed || op.state == FlightState::failed) return;
  op.state = state;
  (state == FlightState::started ? op.started_us : op.ended_us) = now;
}

void FlightRecorder::started(uint64_t handle) { mark(handle, FlightState::started); }
void FlightRecorder::completed(uint64_t handle) { mark(handle, FlightState::completed); }
void FlightRecorder::failed(uint64_t handle) { mark(handle, FlightState::failed); }

uint64_t FlightRecorder::collectives_on(const std::string& group) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = collectives_.find(group);
  return it == collectives_.end() ? 0 : it->second;
}

void FlightRecorder::set_step(int64_t step) {
  std::lock_guard<std::mutex> lock(mutex_);
  step_ = step;
}

std::string FlightRecorder::to_json(int rank, const std::string& reason) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return to_json_locked(rank, reason);
}

std::string FlightRecorder::to_json_locked(int rank, const std::string& reason) const {
  nlohmann::json out;
  out["rank"] = rank;
  out["pid"] = ::getpid();
  out["reason"] = reason;
  out["written_us"] = now_us();
  out["step"] = step_;
  out["capacity"] = ring_.size();
  out["recorded"] = next_handle_;
  nlohmann::json groups = nlohmann::json::object();
  for (const auto& [name, ranks] : groups_) {
    const auto it = collectives_.find(name);
    groups[name] = {{"ranks", ranks}, {"collectives", it == collectives_.end() ? 0 : it->second},
                    {"sends", nlohmann::json::object()}, {"recvs", nlohmann::json::object()}};
  }
  for (const auto& [key, count] : p2p_) {
    groups[std::get<0>(key)][std::get<2>(key) ? "sends" : "recvs"][std::to_string(std::get<1>(key))] = count;
  }
  out["groups"] = std::move(groups);
  nlohmann::json ops = nlohmann::json::array();
  const uint64_t first = next_handle_ > ring_.size() ? next_handle_ - ring_.size() : 0;
  for (uint64_t h = first; h < next_handle_; ++h) {
    const FlightOp& op = ring_[h % ring_.size()];
    nlohmann::json j = {{"seq", op.seq},         {"group", op.group},     {"op", op.op},
                        {"dtype", op.dtype},     {"bytes", op.bytes},     {"plugin", op.plugin},
                        {"phase", op.phase},     {"unit", op.unit},       {"microbatch", op.microbatch},
                        {"step", op.step},       {"state", flight_state_name(op.state)},
                        {"issued_us", op.issued_us}, {"started_us", op.started_us}, {"ended_us", op.ended_us}};
    if (op.peer >= 0) j["peer"] = op.peer;
    ops.push_back(std::move(j));
  }
  out["ops"] = std::move(ops);
  return out.dump(1);
}

bool FlightRecorder::write(const std::string& run_folder, int rank, const std::string& reason, bool wait) const {
  std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
  if (!(wait ? (lock.lock(), true) : lock.try_lock())) return false;
  try {
    const fs::path folder = fs::path(run_folder) / "flight";
    fs::create_directories(folder);
    const fs::path path = folder / ("rank-" + std::to_string(rank) + ".json");
    const fs::path partial = path.string() + ".partial";
    {
      std::ofstream out(partial, std::ios::trunc);
      out << to_json_locked(rank, reason) << "\n";
      if (!out.flush()) return false;
    }
    fs::rename(partial, path);
    return true;
  } catch (const std::exception&) {
    return false;  // a full disk or a folder gone: the rank's own error is the news
  }
}

namespace {
std::mutex g_process_mutex;
FlightRecorder* g_process_recorder = nullptr;
std::string g_process_folder;
int g_process_rank = 0;
std::atomic<bool> g_flight_signal{false};

void on_flight_signal(int) { g_flight_signal.store(true); }
}  // namespace

void install_flight_signal() {
  struct sigaction sa {};
  sa.sa_handler = on_flight_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, nullptr);
}

bool take_flight_signal() { return g_flight_signal.exchange(false); }

namespace {
void on_crash(int sig) {
  // First the plugin whose hook crashed, in the rank's log (the launcher shows its last
  // lines): only bytes made before the crash are copied here.
  const char* hook = current_plugin_hook();
  if (hook[0] != '\0') {
    const char* head = "plait: this rank crashed ";
    (void)!::write(STDERR_FILENO, head, std::strlen(head));
    (void)!::write(STDERR_FILENO, hook, std::strlen(hook));
    (void)!::write(STDERR_FILENO, "\n", 1);
  }
  {
    // Writing the record allocates, which is not safe in a signal handler: a crash inside
    // malloc would deadlock here and leave a rank that neither trains nor dies. The alarm
    // ends it within 2 s whatever happens (SIGALRM's default action).
    ::alarm(2);
    std::unique_lock<std::mutex> lock(g_process_mutex, std::try_to_lock);
    if (lock.owns_lock() && g_process_recorder != nullptr) {
      g_process_recorder->write(g_process_folder, g_process_rank,
                                std::string("it crashed: signal ") + std::to_string(sig) + " (" + strsignal(sig) + ")" +
                                    (hook[0] != '\0' ? std::string(" ") + hook : std::string()),
                                /*wait=*/false);
    }
  }
  ::raise(sig);  // the handler was reset: the rank dies of it, as it would have
}
}  // namespace

void install_crash_flight_record() {
  struct sigaction sa {};
  sa.sa_handler = on_crash;
  sa.sa_flags = SA_RESETHAND | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) sigaction(sig, &sa, nullptr);
}

void set_process_flight_recorder(FlightRecorder* recorder, std::string run_folder, int rank) {
  std::lock_guard<std::mutex> lock(g_process_mutex);
  g_process_recorder = recorder;
  g_process_folder = std::move(run_folder);
  g_process_rank = rank;
}

bool write_process_flight_record(const std::string& reason) {
  std::lock_guard<std::mutex> lock(g_process_mutex);
  return g_process_recorder != nullptr && g_process_recorder->write(g_process_folder, g_process_rank, reason);
}

}  // namespace plait
