#pragma once
// Runs a command to completion with its output in a file.
#include <atomic>
#include <string>
#include <vector>

namespace plait {

// Returns the exit code (128 + signal when killed). When `interrupted` is given and
// becomes true while the command runs (a signal handler of the caller's sets it), the
// command is sent SIGINT once and waited for.
int run_command(const std::vector<std::string>& argv, const std::string& log_path,
                const std::atomic<bool>* interrupted = nullptr);

}  // namespace plait
