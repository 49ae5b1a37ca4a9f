#pragma once
// Logging for the core and for plugins (through the SDK's Logger interface). The
// console gets short lines; a run's log file gets every line with time, source and level.
#include <memory>
#include <string>

#include "plait/sdk/context.hpp"

namespace plait {

// Sends every logger's output to the console and, when `file` is not empty, to that file.
void configure_logging(const std::string& file, bool verbose);
// Adds a log file to the sinks already configured.
void add_log_file(const std::string& file);

// A logger named e.g. "plait" or "plugin.ddp".
std::unique_ptr<Logger> make_logger(const std::string& name);

// The core's own logger.
Logger& core_log();

// While it lives, only warnings and errors reach the console and files: a rank built only
// to be measured (plan --measure) would print its plugins' setup lines into the
// command's own output (its JSON).
class OnlyWarnings {
 public:
  OnlyWarnings();
  ~OnlyWarnings();
  OnlyWarnings(const OnlyWarnings&) = delete;
  OnlyWarnings& operator=(const OnlyWarnings&) = delete;

 private:
  int saved_;
};

// Flushes file sinks (before exit or after an error).
void flush_logs();

// Writes to the log files only (for errors main() will also print to the console).
void write_log_files(LogLevel level, const std::string& message);

}  // namespace plait
