#include "checkpoint/checkpoint_location.hpp"

#include "checkpoint/checkpoint_files.hpp"

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

}  // namespace plait::checkpoint
