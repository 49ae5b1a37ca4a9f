#pragma once
// Launchers of a job on several nodes beat through the job's store from a thread of their
// own, whatever their supervision is busy with: node 0 (whose launcher hosts the store)
// names a node it stopped hearing from, and another node names the store it lost (its
// requests go unanswered). Both are how a lost node or a cut link is told from a rank's
// own failure.
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace plait {

class JobStore;

class NodeHeartbeat {
 public:
  NodeHeartbeat(JobStore& store, int node_rank, int nnodes);  // beats from now on (nnodes > 1)
  ~NodeHeartbeat();
  NodeHeartbeat(const NodeHeartbeat&) = delete;
  NodeHeartbeat& operator=(const NodeHeartbeat&) = delete;

  // In a sentence: another node silent for `quiet` or more (one never heard from: for
  // kNeverHeardAfter), or, on another node than 0, node 0's store that stopped answering.
  std::optional<std::string> lost(std::chrono::milliseconds quiet) const;
  // A restart starts every node's silence afresh: all of them just agreed on it.
  void forgive();

  static constexpr std::chrono::milliseconds kEvery{500};
  static constexpr std::chrono::milliseconds kNeverHeardAfter{10'000};
  // A node this silent when a rank fails is why it failed: six beats missed, which a
  // launcher merely starved of CPU for a moment does not do.
  static constexpr std::chrono::milliseconds kSilentWhileFailing{3000};

 private:
  void beat();
  void run();

  struct Heard {
    int64_t beats = 0;
    std::chrono::steady_clock::time_point at;
  };
  JobStore& store_;
  const int node_rank_;
  mutable std::mutex mutex_;
  std::map<int, Heard> heard_;  // node 0: the other nodes' last beats
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace plait
