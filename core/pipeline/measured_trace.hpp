#pragma once
// The measured timeline of one step on every rank, as one Chrome trace: where a
// pipeline's ranks computed and where they waited ([debug] pipeline_trace = step).
#include <string>
#include <vector>

#include "distributed/world.hpp"
#include "pipeline/pipeline_executor.hpp"

namespace plait {

// Collective: every rank passes its timeline of step `step`; rank 0 gathers them through
// the job's store and writes `path` (one row per rank, named by its mesh coordinates).
void write_measured_trace(World& world, const std::vector<RanAction>& timeline, const ScheduleSpec& spec, int64_t step,
                          std::chrono::milliseconds timeout, const std::string& path);

}  // namespace plait
