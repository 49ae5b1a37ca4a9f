#pragma once
// Saving checkpoints during training ([checkpoint] every, final, dir, keep_last, async).
// Every rank writes its own parts of the state (state.hpp) into the staging folder at
// once; rank 0 gathers their descriptions through the job's store, adds the run's
// progress, the data position and config.lock.toml, and commits (checkpoint_files.hpp).
// With async, a rank copies its parts into host memory (pinned, from a GPU) and a thread
// of its own writes them while training goes on; at most one save is in flight: the next
// one, and the end of the run, wait for it (and report its failure). State already in
// host memory is copied by that thread too, while the next step's forward and backward
// run (they read the state, only the update changes it): the update waits for the copy.
#include <chrono>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint/shard_writer.hpp"

#include "train/rank.hpp"
#include "train/training_progress.hpp"
#include "train/run_plan.hpp"

namespace plait {

class CheckpointSaver {
 public:
  CheckpointSaver(const RunPlan& plan, Rank& rank);
  // Whether the step just done is saved: every N steps, and the last step with `final`.
  bool due(int64_t step) const;
  // Collective over every rank. `data` is the sampler's position (its state()).
  void save(const TrainingProgress& progress, const std::string& data);
  // Before the optimizer changes the state: waits until an async save has its copy.
  void before_update();
  // Waits for a save in flight; rethrows its failure.
  void finish();
  ~CheckpointSaver();

 private:
  struct Job {
    TrainingProgress progress;
    std::string data;
    std::filesystem::path staging;
    std::vector<checkpoint::OwnedPart> parts;
    std::chrono::steady_clock::time_point started;
    double prepare_s = 0.0;  // staging folder, barrier, the parts (a device's copied to host memory)
  };
  bool every_rank_sees(const std::filesystem::path& staging);  // collective
  void write(const Job& job);  // write_parts; a save that fails leaves no staging folder
  void write_parts(const Job& job);  // this rank's file; rank 0 also commits
  void write_async(Job job);   // on the writer thread: the copy of borrowed parts, then write
  void commit(const Job& job, const checkpoint::RankShard& own, double write_s);

  const RunPlan& plan_;
  Rank& rank_;
  std::filesystem::path root_;
  int64_t every_ = 0, keep_last_ = 0, last_step_ = 0;
  bool final_ = true, async_ = false;
  bool explicit_ = false;  // the user asked for saves (every, or final set), not only final's default
  std::thread writer_;
  std::exception_ptr failure_;
  std::future<void> copied_;  // an async save's copy of the state: set when taken
  int64_t pending_step_ = 0;  // the async save whose hold-up of training is not yet reported
  double pending_prepare_s_ = 0.0;
};

}  // namespace plait
