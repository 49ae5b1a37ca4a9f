#pragma once
// Two or more runs side by side: what differs in their configs (and where each value
// came from), whether their losses agree within the equivalence check's tolerance,
// their speed with its spread over steps and whether a difference is larger than that
// noise, where their step time goes, their memory per rank, their communication per
// operation and their MFU. Computed once; the terminal, Markdown and HTML reports only
// lay it out.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compare/run_record.hpp"

namespace plait::compare {

struct ConfigDifference {
  std::string key;                   // "train.lr"
  std::vector<Setting> per_run;      // value and origin, one per run
};

struct LossAgreement {
  std::vector<int64_t> steps;         // recorded by every run, with finite losses
  std::vector<double> worst_relative; // per step: max over runs of |loss - first run's| / |first run's|
  std::optional<double> tolerance;    // plait check's for the runs' dtype; none for bfloat16 or mixed dtypes
  std::string tolerance_basis;        // "float32 (plait check's default)", or why there is none
  std::optional<int64_t> first_divergent;  // first step past the tolerance
  bool equivalent() const { return tolerance && !first_divergent && !steps.empty(); }
};

// Median and quartiles (linear interpolation) of a run's steps after warm-up, and the
// notch of a box plot: median -+ 1.58 IQR / sqrt(n), McGill, Tukey and Larsen's (1978)
// approximate 95% interval for the median. Two medians whose notches do not overlap
// differ beyond the steps' noise.
struct Spread {
  double median = 0.0, q1 = 0.0, q3 = 0.0;
  int64_t n = 0;
  double iqr() const { return q3 - q1; }
  double notch() const;
  // -1: clearly below `other`, 1: clearly above, 0: within the noise.
  int against(const Spread& other) const;
};

struct RunSpeed {
  Spread step_ms, tokens_per_s;
  double mfu = 0.0;                 // median
  int64_t steps_used = 0;           // records after warm-up, over every repeat
  std::vector<double> repeat_step_ms;  // the median step time of each repeat (the run itself first)
  double ratio = 1.0;               // tokens/s median over the first run's
  std::string verdict;              // against the first run: "faster", "slower", "within noise", or "" for the first
};

// Whether `a`'s steps are shorter (-1) or longer (1) than `b`'s beyond the noise, or
// neither (0). With two or more repeats each, run side by side (a sweep's), a paired
// t-test at 95% over the repeats' log ratios of median step time: what differs between
// repeats (the machine's drift) is the noise. With one run each, the notches of the
// pooled steps.
int speed_difference(const RunSpeed& a, const RunSpeed& b);
// Whether a and b have enough steps measured to judge (kFewestStepsToJudge each, or
// paired repeats): a notch over one or two steps has no width, and would call any
// difference real.
constexpr int64_t kFewestStepsToJudge = 5;
bool speed_judgeable(const RunSpeed& a, const RunSpeed& b);
inline constexpr const char* kTooFewSteps = "too few steps to tell";
// The rule speed_difference used, in words.
std::string speed_rule(const RunSpeed& a, const RunSpeed& b);

// A rank's (or, where only a summary was kept, the ranks' median) figures: median over
// the steps used, in ms.
struct RankBreakdown {
  std::string who;                               // "rank 0", "ranks (median)"
  std::vector<std::pair<std::string, double>> phases;  // phase -> ms, in the record's order
  std::vector<std::pair<std::string, double>> comm_ms; // "<axis>.<op>" -> exposed ms
  double step_ms = 0.0;
};

struct RunBreakdown {
  std::vector<RankBreakdown> ranks;  // each rank's, or one row from the summary
  RankBreakdown mean;                // the mean over ranks
  bool ranks_differ = false;         // some phase differs between ranks by over 10% of the step
};

struct RankMemory {
  std::string who;  // "rank 3", or "min"/"median"/"max" from a summary
  int64_t peak = 0, params = 0, grads = 0, optimizer = 0, activations = 0, host = 0;
};

struct CommOp {
  std::string key;  // "<axis>.<op>"
  double bytes_per_step = 0.0, ms_per_step = 0.0, exposed_ms_per_step = 0.0;
};

struct RunFigures {
  RunSpeed speed;
  RunBreakdown breakdown;
  std::vector<RankMemory> memory;
  std::vector<CommOp> comm;  // rank 0's, per step
  std::vector<std::pair<int64_t, double>> losses;  // every recorded step
};

struct Comparison {
  std::vector<RunRecord> runs;
  std::vector<ConfigDifference> differences;
  int64_t same_settings = 0;
  std::vector<std::string> bundle_changes;  // "bundle llama-3d changed: ..."
  std::vector<std::string> warnings;        // a failed run, runs of other models, ...
  LossAgreement loss;
  std::vector<RunFigures> figures;          // one per run
  int64_t warmup_steps = 0;                 // recorded steps left out of speed and breakdown
};

// Fails when fewer than two runs are given.
Comparison compare_runs(std::vector<RunRecord> runs);

// Quartiles of `values` (not empty).
Spread spread_of(std::vector<double> values);

}  // namespace plait::compare
