#pragma once
// A drill that cannot lie: a run with injected faults ([debug] faults, PLAIT_FAULTS) that
// ended without one of them striking tested nothing, and must not end "finished", exit 0.
// Every strike is in faults.jsonl (fault_injector.hpp); a fault whose attempt the job never
// reached, whose step it resumed past, or whose collective never came, is not there.
#include <string>
#include <vector>

#include "debug/fault_plan.hpp"

namespace plait {

// The faults of ranks first_rank .. first_rank + ranks - 1 (this node's: each node's ranks
// record into its own run folder) that never struck.
std::vector<FaultSpec> faults_never_struck(const std::vector<FaultSpec>& faults, const std::string& run_folder,
                                           int first_rank, int ranks);

// Throws, naming each and why when it can tell, when any of those never struck in the
// `attempts` the job made.
void check_faults_struck(const std::vector<FaultSpec>& faults, const std::string& run_folder, int first_rank, int ranks,
                         int attempts);

}  // namespace plait
