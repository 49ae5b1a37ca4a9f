#pragma once
// The run folder: created only after every check has passed, never reused, and every
// file in it written whole (temporary name, then rename).
#include <cstdint>
#include <string>

namespace plait {

// --out, or runs/<config stem>-<YYYYmmdd-HHMMSS> under the working directory.
std::string choose_run_folder(const std::string& out, const std::string& config_path);

// Refuses a path that exists and is not an empty folder, or that cannot be made.
void check_run_folder(const std::string& path);
// Checks it, then creates it.
void create_run_folder(const std::string& path);

// A restarted job's folder ([checkpoint] resume = "auto"): the steps after the one it
// resumes from (0: all) leave metrics.jsonl, since they are trained again.
void reuse_run_folder(const std::string& path, int64_t resume_step);

void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace plait
