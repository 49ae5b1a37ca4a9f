#pragma once
// Where a job that restarts itself resumes: the newest complete checkpoint under its
// checkpoint folder whose every file has the size and checksum its index says. A save
// that a crash tore never got an index; one whose bytes were damaged afterwards is
// passed over (and named), so a restart never lands on a checkpoint it cannot load.
// Reading every byte back costs about one read of the checkpoint, from the page cache
// when it was just written: far less than the steps a bad restart would lose.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace plait {

struct RestartPoint {
  std::filesystem::path checkpoint;  // empty: none is sound; start from the beginning
  int64_t step = 0;
  std::vector<std::string> refused;  // "step-8: <why>", newest first
};

RestartPoint choose_restart_point(const std::filesystem::path& checkpoint_root);

}  // namespace plait
