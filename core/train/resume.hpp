#pragma once
// Resuming: which checkpoint a run continues from, and loading it into a rank. The
// launcher has checked the checkpoint against the run before any rank started
// (run/resume_check.hpp; which checkpoint: checkpoint/checkpoint_location.hpp); a rank reads only its own parts, every byte checked.
#include <filesystem>
#include <optional>
#include <string>

#include "config/resolve.hpp"
#include "train/rank.hpp"
#include "train/training_progress.hpp"
#include "train/run_plan.hpp"

namespace plait {

struct Resumed {
  TrainingProgress progress;
  std::string data;  // the sampler's state
};

// The checkpoint this run continues from: the one plait run checked, else [checkpoint]'s
// own answer; nothing for a fresh start.
std::optional<std::filesystem::path> resume_point(const RunPlan& plan);

// The data plugin's state loaded from `folder`, tied copies refreshed (collective over
// every rank: plugins may communicate while they load).
Resumed load_checkpoint(const RunPlan& plan, Rank& rank, const std::filesystem::path& folder);

}  // namespace plait
