#pragma once
// This rank's share of the injected faults (debug/fault_plan.hpp), acted on where they
// strike: at a step's start (StepRunner), before a collective is issued (the counted
// communicator), after a checkpoint is written (the saver). The rank's World holds it
// (World::inject; null: no faults, and the hooks cost a null check); nothing reads a
// process-wide one.
#include <atomic>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "debug/fault_plan.hpp"

namespace plait {

class FaultInjector {
 public:
  // Keeps the faults of `rank` in this `attempt` of the job, and says in the rank's log
  // which they are. Each strike is appended to <run_folder>/faults.jsonl first (fault,
  // rank, attempt, step, wall-clock time): how a restart's record times its detection.
  FaultInjector(const std::vector<FaultSpec>& faults, int rank, int attempt, std::string run_folder);
  bool empty() const { return faults_.empty(); }

  // At the start of `step`: kill, segv, exit and hang strike here; abort tears the
  // communicators down. Returns what the step itself must do: the milliseconds slow
  // faults add to it, and whether a nonfinite fault spoils its loss on this rank.
  struct InStep {
    double slow_ms = 0.0;
    bool spoil_loss = false;
  };
  InStep at_step(int64_t step);
  // Before collective #seq on `group` is issued: kill, segv, exit and hang strike here;
  // true when it must go out with half its size (a mismatch).
  bool at_collective(const std::string& group, uint64_t seq);
  // After an abort: every operation fails. The abort's text, or empty; any thread may ask
  // (the data plugin's hooks, a pipeline's sends) while the rank's main thread strikes.
  std::string aborted() const {
    const FaultSpec* f = aborted_.load(std::memory_order_acquire);
    return f == nullptr ? std::string() : f->text;
  }
  // The file of the checkpoint of `step` this rank wrote gets a byte flipped.
  bool corrupts(int64_t step) const;

 private:
  void strike(const FaultSpec& fault, const std::string& where);

  void record(const FaultSpec& fault, const std::string& where) const;

  std::vector<FaultSpec> faults_;
  int rank_ = 0, attempt_ = 0;
  std::string run_folder_;
  std::set<const FaultSpec*> slowed_;  // slow faults recorded as struck
  std::atomic<const FaultSpec*> aborted_{nullptr};  // the abort fault (in faults_, fixed since construction), once it struck
};

// Flips the bits of one byte in the middle of `path` (a corrupt fault); false if it could not.
bool flip_byte(const std::string& path);

}  // namespace plait
