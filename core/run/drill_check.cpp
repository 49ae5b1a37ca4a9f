#include "run/drill_check.hpp"

#include <algorithm>

#include "plait/sdk/error.hpp"
#include "output/restart_record.hpp"

namespace plait {

std::vector<FaultSpec> faults_never_struck(const std::vector<FaultSpec>& faults, const std::string& run_folder,
                                           int first_rank, int ranks) {
  const std::vector<FaultStrike> strikes = read_fault_strikes(run_folder);
  std::vector<FaultSpec> missed;
  for (const auto& f : faults) {
    if (f.rank < first_rank || f.rank >= first_rank + ranks) continue;
    const bool hit = std::any_of(strikes.begin(), strikes.end(),
                                 [&](const FaultStrike& s) { return struck(f, s.fault, s.rank, s.attempt); });
    if (!hit) missed.push_back(f);
  }
  return missed;
}

void check_faults_struck(const std::vector<FaultSpec>& faults, const std::string& run_folder, int first_rank, int ranks,
                         int attempts) {
  const std::vector<FaultSpec> missed = faults_never_struck(faults, run_folder, first_rank, ranks);
  if (missed.empty()) return;
  std::string list;
  for (const auto& f : missed) {
    std::string why;
    if (f.attempt >= attempts) {
      why = concat(": the job made ", attempts - 1, " restart(s), never attempt ", f.attempt);
    } else if (f.op > 0) {
      why = concat(": rank ", f.rank, " never issued collective #", f.op, " on group ", f.group);
    }
    list += concat(list.empty() ? "" : "; ", "'", f.text, "' (", f.place, ")", why);
  }
  throw Error(concat("the training ended, but ", missed.size() == 1 ? "an injected fault" : "injected faults",
                     " never struck, so this drill tested nothing: ", list),
              "check the fault's rank, step, attempt or op=GROUP#N against the run: flight/rank-<r>.json numbers each "
              "group's collectives, and faults.jsonl lists the strikes");
}

}  // namespace plait
