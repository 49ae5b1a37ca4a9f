#include "distributed/comm_stats.hpp"

#include <algorithm>
#include <utility>

namespace plait {

double CommStats::bus_factor(const std::string& op, int n) {
  if (n <= 1) return 0.0;
  const double ring = static_cast<double>(n - 1) / static_cast<double>(n);
  if (op == "all_reduce") return 2.0 * ring;
  if (op == "all_gather" || op == "reduce_scatter") return ring;
  if (op == "barrier") return 0.0;
  return 1.0;  // broadcast, send, recv
}

uint64_t CommStats::issue(const std::string& axis, const std::string& op, const std::string& caller,
                          int64_t payload_bytes, double bus_bytes, std::string description,
                          std::function<bool()> is_completed) {
  std::lock_guard<std::mutex> lock(mutex_);
  settle_locked();  // a held Work keeps its tensors: let go of those the device finished
  callers_[caller.empty() ? std::string("unknown") : caller] += bus_bytes;
  const std::string key = axis + "." + op;
  OpCounters& c = counters_[key];
  c.calls += 1;
  c.payload_bytes += payload_bytes;
  c.bus_bytes += bus_bytes;
  const uint64_t id = next_id_++;
  pending_[id] = {key, PendingOp{.id = id,
                                 .description = std::move(description),
                                 .issued = std::chrono::steady_clock::now(),
                                 .is_completed = std::move(is_completed),
                                 .held = std::nullopt}};
  if (issuing_ > 0) --issuing_;  // pending now, which keeps the wire window open
  return id;
}

void CommStats::finish(Pending::iterator it, std::optional<double> device_seconds,
                       std::chrono::steady_clock::time_point now) {
  counters_[it->second.first].seconds +=
      device_seconds.value_or(std::chrono::duration<double>(now - it->second.second.issued).count());
  pending_.erase(it);
  if (pending_.empty()) close_wire_window_locked();
}

void CommStats::count_wire(std::function<int64_t()> meter) {
  std::lock_guard<std::mutex> lock(mutex_);
  wire_meter_ = std::move(meter);
  wire_at_drain_ = wire_meter_();
}

void CommStats::before_issue(int operations) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!wire_meter_ || operations <= 0) return;
  issuing_ += operations;
  if (wire_window_open_) return;
  wire_window_start_ = wire_meter_();
  wire_window_open_ = true;
}

void CommStats::close_wire_window_locked() {
  if (!wire_window_open_ || issuing_ > 0) return;
  wire_in_ops_ += wire_meter_() - wire_window_start_;
  wire_window_open_ = false;
}

void CommStats::complete(uint64_t id, std::optional<double> device_seconds, double exposed) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  counters_[it->second.first].exposed_seconds += exposed;
  finish(it, device_seconds, std::chrono::steady_clock::now());
}

void CommStats::waited(uint64_t id, double blocked, HeldOp work) {
  // Asked outside the lock: a backend's completion query may take its own locks.
  const bool done = work.is_completed();
  const std::optional<double> device_seconds = done ? work.device_seconds() : std::nullopt;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  counters_[it->second.first].exposed_seconds += blocked;
  if (done) {
    finish(it, device_seconds, std::chrono::steady_clock::now());
  } else {
    it->second.second.held = std::move(work);
  }
}

namespace {

bool is_done(const PendingOp& op) {
  if (op.held) return op.held->is_completed();
  return op.is_completed && op.is_completed();
}

}  // namespace

void CommStats::settle() {
  std::lock_guard<std::mutex> lock(mutex_);
  settle_locked();
}

void CommStats::settle_locked() {
  const auto now = std::chrono::steady_clock::now();
  for (auto it = pending_.begin(); it != pending_.end();) {
    const auto next = std::next(it);
    const PendingOp& op = it->second.second;
    if (op.held && op.held->is_completed()) finish(it, op.held->device_seconds(), now);
    it = next;
  }
}

CommStats::Drained CommStats::drain() {
  settle();
  std::lock_guard<std::mutex> lock(mutex_);
  Drained out;
  out.by_op.swap(counters_);
  out.bus_bytes_by_caller.swap(callers_);
  if (wire_window_open_) {  // an operation spans the drain: its bytes so far are this record's
    close_wire_window_locked();
    wire_window_start_ = wire_meter_();
    wire_window_open_ = true;
  }
  out.wire_bytes_in_ops = std::exchange(wire_in_ops_, 0);
  if (wire_meter_) {
    const int64_t sent = wire_meter_();
    out.wire_bytes = sent - std::exchange(wire_at_drain_, sent);
  }
  return out;
}

std::vector<std::string> CommStats::newly_overdue(std::chrono::milliseconds age) {
  std::vector<uint64_t> done;
  std::vector<std::string> out;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  for (auto& [id, entry] : pending_) {
    PendingOp& op = entry.second;
    if (now - op.issued < age) continue;
    if (is_done(op)) {
      done.push_back(id);  // finished (or its handle was dropped) without anyone waiting
      continue;
    }
    if (op.reported) continue;
    op.reported = true;
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now - op.issued).count();
    out.push_back(op.description + (op.held ? ", waited for and still running on the device" : "") + ", in flight for " +
                  std::to_string(seconds) + " s");
  }
  for (uint64_t id : done) {
    auto it = pending_.find(id);
    finish(it, it->second.second.held ? it->second.second.held->device_seconds() : std::nullopt, now);
  }
  return out;
}

std::vector<std::string> CommStats::in_flight() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> out;
  const auto now = std::chrono::steady_clock::now();
  for (auto& [id, entry] : pending_) {
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now - entry.second.issued).count();
    out.push_back(entry.second.description + " (" + std::to_string(seconds) + " s)");
  }
  return out;
}

}  // namespace plait
