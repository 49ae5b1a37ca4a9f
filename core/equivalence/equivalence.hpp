#pragma once
// The equivalence principle as a check: a strategy must give the same loss at every
// step, and the same full gradient of every parameter after step one, as the
// single-process run of the same config (same seed, same global batch).
#include <string>
#include <vector>

namespace plait {

struct LossComparison {
  int64_t step = 0;
  double candidate = 0.0, reference = 0.0, relative = 0.0;
};

struct GradComparison {
  std::string name;
  double relative = 0.0;        // ||a - b|| / ||b||  (absolute when ||b|| = 0)
  double reference_norm = 0.0;
};

struct EquivalenceReport {
  double tolerance = 0.0;
  std::vector<LossComparison> losses;
  std::vector<GradComparison> grads;
  std::vector<std::string> failures;  // empty when the runs agree
  bool passed() const { return failures.empty(); }
  double worst_loss() const;
  double worst_grad() const;
  std::string to_json() const;
};

// The loss of every step a run folder's metrics.jsonl records, in order.
std::vector<double> run_losses(const std::string& dir);

// Reads metrics.jsonl and debug_grads.safetensors of both run folders.
EquivalenceReport equivalence_of(const std::string& candidate_dir, const std::string& reference_dir, double tolerance);

}  // namespace plait
