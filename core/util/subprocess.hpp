#pragma once
// Runs a command to completion with its output in a file.
#include <atomic>
#include <string>
#include <vector>

namespace plait {

// From the first call on, SIGINT, SIGTERM and SIGHUP no longer end this process: they are
// recorded (the first one wins) and interrupt run_command's wait, which passes the same
// signal on to the command and waits for it to stop. Returns the signal, 0 until one came.
const std::atomic<int>& catch_stop_signals();

// What a command throws once a stop signal was passed on to the command it ran (`what`:
// "its candidate run in FOLDER"): plait then exits 128 + signal, saying what stopped.
struct StoppedAsAsked {
  int signal = 0;
  std::string what;
};

// Returns the exit code (128 + signal when killed). Once catch_stop_signals() has caught
// a signal, the command is sent that signal once and waited for.
int run_command(const std::vector<std::string>& argv, const std::string& log_path);

}  // namespace plait
