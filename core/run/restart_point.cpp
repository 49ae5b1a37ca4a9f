#include "run/restart_point.hpp"

#include "checkpoint/checkpoint_files.hpp"
#include "checkpoint/checkpoint_reader.hpp"
#include "plait/sdk/error.hpp"

namespace plait {

RestartPoint choose_restart_point(const std::filesystem::path& checkpoint_root) {
  RestartPoint point;
  const auto all = checkpoint::complete_checkpoints(checkpoint_root);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    try {
      checkpoint::CheckpointReader(it->second).verify();
      point.checkpoint = it->second;
      point.step = it->first;
      return point;
    } catch (const std::exception& e) {
      point.refused.push_back(concat(it->second.filename().string(), ": ", e.what()));
    }
  }
  return point;
}

}  // namespace plait
