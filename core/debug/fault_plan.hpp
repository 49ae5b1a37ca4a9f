#pragma once
// Faults injected on purpose, for tests and drills: `[debug] faults` (and PLAIT_FAULTS,
// ';'-separated, for a drill on a job started without them), each one
// "<kind> rank=R step=S" or "<kind> rank=R op=GROUP#N" (the N-th collective on group
// GROUP, as the flight recorder numbers it), plus "ms=M" for slow and "attempt=A" for the
// attempt of a restarted job it strikes in (0, the default, is the first start: a job
// restarted after the fault does not meet it again). Kinds: kill (SIGKILL),
// segv, exit (code 1), hang (stop making progress), slow (sleep M ms in every step from
// S), mismatch (issue that collective with half its size), abort (tear down the rank's
// communicators: every later operation fails), corrupt (flip a byte of rank R's file of
// the checkpoint of step S once it is written), nonfinite (rank R's share of step S's
// loss is nan, to try [train] on_nonfinite).
//
// One plan holds them all: the older [debug] slow_ms/slow_rank and
// nonfinite_step/nonfinite_rank are read as the slow and nonfinite faults they stand for
// (configured_faults), so one injector acts on every fault and one check refuses those
// that could never strike.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace plait {

class ResolvedConfig;

enum class FaultKind { kill, segv, exit, hang, slow, mismatch, abort, corrupt, nonfinite };

struct FaultSpec {
  FaultKind kind = FaultKind::kill;
  int rank = 0;
  int64_t step = 0;     // 0: triggered by op
  std::string group;    // with op
  uint64_t op = 0;      // the collective's number on group; 0: triggered by step
  double ms = 0.0;      // slow
  int attempt = 0;      // the restart it strikes in (0: the first start)
  std::string text;     // as the user wrote it
  std::string place;    // where: the config line, or PLAIT_FAULTS
};

// Parses each spec; `place` names where they came from (the config line, PLAIT_FAULTS) in
// the error a malformed one gets. Ranks and steps are checked by check_faults.
std::vector<FaultSpec> parse_faults(const std::vector<std::string>& specs, const std::string& place);
// What a job can meet: its ranks, steps, restarts, the communicator groups each rank is in
// and the steps it saves a checkpoint at.
struct FaultReach {
  int world_size = 1;
  int64_t steps = 0;
  int64_t max_restarts = 0;
  // The groups `rank` issues collectives on ("world", "dp.0", "tp.4", ...); a plugin's
  // subgroups are named under them ("dp.0.<name>").
  std::function<std::vector<std::string>(int rank)> groups_of;
  std::function<bool(int64_t step)> saves_at;  // a checkpoint is written after this step
};

// Refuses a fault that could never strike: on a rank the job does not have, at a step it
// never reaches, in an attempt past the restarts the job may make, on a group its rank is
// not in (or the job does not have), or a corrupt at a step that saves no checkpoint.
void check_faults(const std::vector<FaultSpec>& faults, const FaultReach& reach);

// Whether a strike recorded in faults.jsonl (its text, rank and attempt) is this fault's.
bool struck(const FaultSpec& fault, const std::string& text, int rank, int attempt);

// Every fault of a run: [debug] faults, the faults [debug] slow_ms and nonfinite_step
// stand for (their place is the key that set them), and PLAIT_FAULTS.
std::vector<FaultSpec> configured_faults(const ResolvedConfig& config);
// For each older [debug] key set, a note with the fault it stands for, in its own words.
std::vector<std::string> older_fault_key_notes(const ResolvedConfig& config);

}  // namespace plait
