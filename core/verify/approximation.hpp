#pragma once
// `plait verify`'s verdict on an approximate plugin (capability `approximate`): over the
// same batches as ddp, its final loss may end at most a given fraction above ddp's, and
// must have fallen; the bytes each sent a step are reported side by side. Judged from
// the two runs' metrics.jsonl records.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace plait::verify {

// The mean loss of the last tenth of the records (at least one): one batch's noise
// does not decide.
double final_loss(const std::vector<nlohmann::json>& records);
// Rank 0's bytes in the core's counted operations, a step.
double bytes_per_step(const std::vector<nlohmann::json>& records);

struct GapVerdict {
  bool passed = false;
  std::string detail;  // both losses, the gap and the allowed one, both byte rates
};
GapVerdict loss_gap_verdict(const std::vector<nlohmann::json>& mine, const std::vector<nlohmann::json>& ddp,
                            double allowed);

}  // namespace plait::verify
