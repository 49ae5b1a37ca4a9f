#pragma once
// A job over several machines keeps each node's rank files in that node's run folder, so
// no launcher alone has every rank's flight record. When a start of the job ends, each
// launcher posts its ranks' records to the job's store (an empty one for a rank that
// wrote none, so nobody waits for it), and takes the records it lacks from the store into
// its own run folder: every node's report, node 0's error included, then covers every rank.
#include <chrono>
#include <string>
#include <vector>

namespace plait {

class JobStore;

void post_flight_records(JobStore& job, int attempt, const std::string& run_folder, const std::vector<int>& ranks);

// Waits at most `wait` for the records of every rank below `world_size` that run_folder
// lacks; returns the ranks whose record never came (their launcher is gone).
std::vector<int> take_flight_records(JobStore& job, int attempt, const std::string& run_folder, int world_size,
                                     std::chrono::milliseconds wait);

}  // namespace plait
