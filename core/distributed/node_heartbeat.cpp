#include "distributed/node_heartbeat.hpp"

#include <cmath>

#include "distributed/rendezvous.hpp"
#include "plait/sdk/error.hpp"

namespace plait {

NodeHeartbeat::NodeHeartbeat(JobStore& store, int node_rank, int nnodes) : store_(store), node_rank_(node_rank) {
  if (nnodes <= 1) return;
  const auto now = std::chrono::steady_clock::now();
  for (int n = 1; n < (node_rank == 0 ? nnodes : 1); ++n) heard_[n] = {0, now};
  thread_ = std::thread([this] { run(); });
}

NodeHeartbeat::~NodeHeartbeat() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void NodeHeartbeat::run() {
  while (!stop_) {
    try {
      beat();
    } catch (const std::exception&) {
      if (store_.lost()) return;  // nothing more to beat to; lost() says why
    }
    for (auto slept = std::chrono::milliseconds(0); slept < kEvery && !stop_; slept += std::chrono::milliseconds(50)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

void NodeHeartbeat::beat() {
  if (node_rank_ != 0) {
    store_.add(concat("heartbeat/node-", node_rank_), 1);
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  std::map<int, int64_t> beats;
  for (const auto& [node, heard] : heard_) beats[node] = store_.add(concat("heartbeat/node-", node), 0);
  const std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [node, heard] : heard_) {
    if (beats[node] != heard.beats) heard = {beats[node], now};
  }
}

void NodeHeartbeat::forgive() {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  for (auto& [node, heard] : heard_) heard.at = now;
}

std::optional<std::string> NodeHeartbeat::lost(std::chrono::milliseconds quiet) const {
  if (auto gone = store_.lost_reason()) return gone;
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  for (const auto& [node, heard] : heard_) {
    const auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(now - heard.at);
    // A node never heard from may still be starting: only the long wait names it.
    if (silent < quiet || (heard.beats == 0 && silent < kNeverHeardAfter)) continue;
    return concat("node ", node, " is lost: its launcher has not been heard from through the job's store for ",
                  std::round(silent.count() / 100.0) / 10.0, " s (the node is down, or the network to it is cut)");
  }
  return std::nullopt;
}

}  // namespace plait
