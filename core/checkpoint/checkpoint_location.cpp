#include "checkpoint/checkpoint_location.hpp"

#include "checkpoint/checkpoint_files.hpp"

#include <fstream>

#include <unistd.h>

#include "log/logging.hpp"
#include "plait/sdk/error.hpp"
#include "util/writable_folder.hpp"

namespace plait::checkpoint {
namespace fs = std::filesystem;

fs::path checkpoint_root(const Options& checkpoint, const std::string& run_folder) {
  if (auto dir = checkpoint.find<std::string>("dir")) return *dir;
  return fs::path(run_folder) / "checkpoints";
}

std::optional<fs::path> resume_source(const Options& checkpoint, const std::string& run_folder) {
  if (auto from = checkpoint.find<std::string>("resume_from")) return resolve_checkpoint(*from);
  if (checkpoint.get<std::string>("resume") != "auto") return std::nullopt;
  // A restarted job that had saved nothing yet starts afresh.
  return newest_checkpoint(checkpoint_root(checkpoint, run_folder));
}

std::optional<CheckpointChoice> resume_choice(const Options& checkpoint, const std::string& run_folder) {
  if (auto from = checkpoint.find<std::string>("resume_from")) return checkpoints_at(*from);
  if (checkpoint.get<std::string>("resume") != "auto") return std::nullopt;
  return checkpoints_in(checkpoint_root(checkpoint, run_folder));
}

namespace {

constexpr const char* kOwner = "owner";

std::string canonical_folder(const std::string& path) {
  std::error_code ec;
  const fs::path c = fs::weakly_canonical(fs::absolute(path), ec);
  return (ec ? fs::absolute(path) : c).lexically_normal().string();
}

}  // namespace

void check_checkpoint_dir(const Options& checkpoint, const std::string& run_folder) {
  const auto dir = checkpoint.find<std::string>("dir");
  if (!dir) return;  // the run folder's own checkpoints/, checked with it
  const std::string where = checkpoint.where("dir");
  // Found now, not at the first save after hours of training.
  std::error_code ec;
  if (checkpoint.get<int64_t>("every") > 0 || checkpoint.get<bool>("final")) {
    fs::path nearest = fs::absolute(*dir);
    while (!nearest.empty() && !fs::exists(nearest, ec) && nearest != nearest.parent_path()) nearest = nearest.parent_path();
    const bool itself = nearest == fs::absolute(*dir);
    PLAIT_CHECK(fs::is_directory(nearest, ec),
                concat(where, ": [checkpoint] dir ", *dir,
                       itself ? " is a file, not a folder" : concat(" cannot be made: ", nearest.string(), " is a file")),
                "name a folder for the checkpoints");
    const std::string problem = folder_write_problem(nearest);  // a real write: root passes access() everywhere
    PLAIT_CHECK(problem.empty(),
                concat(where, ": [checkpoint] dir ", *dir, ": ", nearest.string(), " is not writable (", problem, ")"),
                "choose a folder this user can write, or check its permissions");
  }
  if (!fs::is_directory(*dir, ec)) return;
  std::ifstream in(fs::path(*dir) / kOwner);
  std::string owner;
  std::getline(in, owner);
  if (!owner.empty()) {
    PLAIT_CHECK(canonical_folder(owner) == canonical_folder(run_folder),
                concat(where, ": [checkpoint] dir ", *dir, " holds the checkpoints of the run in ", owner,
                       "; a run saves only into its own (its saves would move that run's latest, and keep_last prune its "
                       "checkpoints)"),
                concat("choose another [checkpoint] dir; to start from those checkpoints, --resume ", *dir));
    return;
  }
  PLAIT_CHECK(complete_checkpoints(*dir).empty() && !fs::exists(fs::path(*dir) / "latest"),
              concat(where, ": [checkpoint] dir ", *dir,
                     " holds checkpoints that no run saving there claims (another run's checkpoints/ folder?)"),
              concat("choose an empty or new [checkpoint] dir; to start from those checkpoints, --resume ", *dir));
}

void claim_checkpoints(const Options& checkpoint, const std::string& run_folder) {
  if (const auto dir = checkpoint.find<std::string>("dir")) {
    std::error_code ec;
    fs::create_directories(*dir, ec);
    PLAIT_CHECK(!ec, concat(checkpoint.where("dir"), ": cannot create [checkpoint] dir ", *dir, ": ", ec.message()),
                "choose a folder this user can write");
    if (!fs::exists(fs::path(*dir) / kOwner)) std::ofstream(fs::path(*dir) / kOwner) << canonical_folder(run_folder) << "\n";
  }
  // No save of this run has begun, and the folder is this run's alone.
  for (const auto& line : tidy_unfinished_saves(checkpoint_root(checkpoint, run_folder))) core_log().warn(line);
}

}  // namespace plait::checkpoint
