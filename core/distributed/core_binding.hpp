#pragma once
// Binding each rank of a node to its own cores ([distributed] bind_cores). Ranks that
// share cores are preempted by each other's compute and communication threads, and the
// kernel migrates them between cores: a pipeline stage that runs late holds up every
// stage after it, so on a shared CPU the measured bubbles grow past the schedule's.
// Each rank takes a contiguous slice of the cores its launcher was allowed to use (so a
// job started under taskset or a cgroup stays inside them); slices differ by one core
// at most.
#include <string>
#include <vector>

namespace plait {

// The cores this process may run on (its affinity mask), in increasing order.
std::vector<int> usable_cores();

// Local rank `local_rank`'s slice of `cores` when `local_ranks` ranks share them.
// Throws plait::Error when there are fewer cores than ranks.
std::vector<int> core_slice(const std::vector<int>& cores, int local_ranks, int local_rank);

// "0-3,8,10-11".
std::string format_core_list(const std::vector<int>& cores);

// Restricts every thread of this process (and the threads it starts later) to `cores`.
void bind_process_to(const std::vector<int>& cores);

}  // namespace plait
