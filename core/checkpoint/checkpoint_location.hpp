#pragma once
// Where a run's checkpoints go, and which one it resumes from: the same answer for the
// launcher (which checks it before any rank starts) and for every rank.
#include <filesystem>
#include <optional>
#include <string>

#include "plait/sdk/options.hpp"

namespace plait::checkpoint {

// [checkpoint] dir, or checkpoints/ in the run folder.
std::filesystem::path checkpoint_root(const Options& checkpoint, const std::string& run_folder);

// [checkpoint] resume_from, or with resume = "auto" the latest checkpoint under the run's
// checkpoint folder when there is one; nothing: a fresh start.
std::optional<std::filesystem::path> resume_source(const Options& checkpoint, const std::string& run_folder);

struct CheckpointChoice;
// What a resume may take, newest first (checkpoints_at): the checkpoint resume_from names
// alone, or every complete one of the folder it names (a run folder's, or with resume =
// "auto" the run's own); nothing: a fresh start.
std::optional<CheckpointChoice> resume_choice(const Options& checkpoint, const std::string& run_folder);

// [checkpoint] dir, before launch: a folder this run can make or write (when it saves),
// and one it owns. A folder of checkpoints belongs to the run that saves into it: with [checkpoint] dir,
// its `owner` file names that run's folder. Refused before launch: another run's folder
// of checkpoints (saving there would replace its `latest`, and keep_last prune its
// checkpoints), or one holding checkpoints no run claims. The run folder's own
// checkpoints/ needs no owner file.
void check_checkpoint_dir(const Options& checkpoint, const std::string& run_folder);
// Records this run as the owner (once its run folder is held), and clears what its saves
// cut short left there (tidy_unfinished_saves).
void claim_checkpoints(const Options& checkpoint, const std::string& run_folder);

}  // namespace plait::checkpoint
