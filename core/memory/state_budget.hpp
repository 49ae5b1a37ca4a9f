#pragma once
// [train] memory_limit_mb against what each rank must hold before it computes anything:
// its share of the parameters, gradients and optimizer state, as its data plugin's cost
// model says it keeps them on the device (offloaded state is not counted against the
// budget), and the frozen parameters the core keeps whole. A budget below that fails in
// the first step, after the run folder and every rank were made: it is refused before
// launch instead, naming the key and the bytes.

namespace plait {

struct PreparedRun;

// Nothing to check when memory_limit_mb is 0 (no budget) or the data plugin has no cost
// model (what it keeps is known only once it runs: the budget is enforced then).
void check_state_fits_memory_limit(const PreparedRun& run);

// The state this node's `nproc` ranks hold in host memory before their first step (all of
// it on the CPU; what offload keeps there on a GPU) against what this machine has free
// (MemAvailable, or less under a cgroup's limit): a run past it is killed by the kernel in
// its first minutes, leaving its status "running"; it is refused before launch instead.
void check_state_fits_host(const PreparedRun& run, int node_rank, int nproc);

}  // namespace plait
