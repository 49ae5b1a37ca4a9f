#pragma once
// Runs a command to completion with its output in a file.
#include <string>
#include <vector>

namespace plait {

// Returns the exit code (128 + signal when killed).
int run_command(const std::vector<std::string>& argv, const std::string& log_path);

}  // namespace plait
