#pragma once
// A checkpoint's life on disk. Its ranks write into a staging folder (.step-<N>.partial)
// that no reader takes for a checkpoint; the index goes in last, every file and the
// folder are fsynced, then the folder is renamed to step-<N> and the `latest` pointer is
// replaced by rename. A crash at any moment leaves the previous checkpoint and pointer
// intact, and never a folder named like a complete one.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint_index.hpp"

namespace plait::checkpoint {

namespace fs = std::filesystem;

std::string step_folder_name(int64_t step);
// The staging folder of `step` under `root`, emptied (a crashed save's leftovers go).
fs::path begin_staging(const fs::path& root, int64_t step);
// Writes the index into the staging folder and makes it step-<N>, then `latest`.
fs::path commit(const fs::path& root, const fs::path& staging, const CheckpointIndex& index);
// Removes the oldest complete checkpoints beyond `keep_last` (0 keeps all), never the latest.
void prune(const fs::path& root, int64_t keep_last);
// What saves cut short left in `root`, for the run that owns it to clear before it starts:
// a staging folder is removed (a full checkpoint's bytes, never to be read), and a step
// whose re-save was cut between its two renames gets its previous copy back (`latest`
// still names it). One sentence for each thing done.
std::vector<std::string> tidy_unfinished_saves(const fs::path& root);

// A checkpoint folder from what the user named: a checkpoint (index.json), a folder
// of checkpoints (its newest complete one), or a run folder (its checkpoints/' newest).
fs::path resolve_checkpoint(const fs::path& path);
// The complete checkpoints the same words stand for, newest first: one when a checkpoint
// was named itself (`named`: none other may take its place), else every one of the folder
// of checkpoints (`root`), for a resume that passes over a damaged newest one.
struct CheckpointChoice {
  std::vector<fs::path> newest_first;
  fs::path root;
  bool named = false;
};
CheckpointChoice checkpoints_at(const fs::path& path);
// The same of a folder of checkpoints (nothing: it has none).
std::optional<CheckpointChoice> checkpoints_in(const fs::path& root);
// A step-<N> folder must hold step N (a renamed or copied-in one is refused).
void check_name_is_step(const fs::path& folder);
CheckpointIndex read_index(const fs::path& folder);
// The complete checkpoints (step-<N> with an index) in a folder of checkpoints, oldest first.
std::vector<std::pair<int64_t, fs::path>> complete_checkpoints(const fs::path& root);
// The complete checkpoint of the highest step in a folder of checkpoints, if any.
std::optional<fs::path> newest_checkpoint(const fs::path& root);

// Refuses a listed file that is missing or not of the size the index says, naming it.
void check_file_present(const fs::path& folder, const std::string& name, const FileEntry& entry);

// xxh3-64 of a whole file, 16 hex digits.
std::string file_xxh3(const fs::path& path);
void fsync_path(const fs::path& path);  // a file or a folder

}  // namespace plait::checkpoint
