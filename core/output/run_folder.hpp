#pragma once
// The run folder: created only after every check has passed, never reused, and every
// file in it written whole (temporary name, then rename).
#include <cstdint>
#include <string>

namespace plait {

// --out, or runs/<config stem>-<YYYYmmdd-HHMMSS> under the working directory.
std::string choose_run_folder(const std::string& out, const std::string& config_path);

// Refuses a path that exists and is not an empty folder, or that cannot be made, naming it
// as `noun` ("the run folder") and the flag that chose it ("--out"); `promise` says why.
void check_new_folder(const std::string& path, const std::string& noun, const std::string& flag,
                      const std::string& promise);
void check_run_folder(const std::string& path);  // the run folder, --out
// Checks it, then creates it.
void create_run_folder(const std::string& path);

// A restarted job's folder ([checkpoint] resume = "auto"): the steps after the one it
// resumes from (0: all) leave metrics.jsonl, since they are trained again.
void reuse_run_folder(const std::string& path, int64_t resume_step);

// Refuses a file path whose folder does not exist or cannot be written, or that is a folder,
// before the work whose result goes there.
void check_file_can_be_written(const std::string& path);

// The whole file or none: a temporary beside it, renamed over it; the temporary is
// removed when the write fails.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace plait
