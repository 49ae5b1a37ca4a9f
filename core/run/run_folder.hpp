#pragma once
// The run folder: created only after every check has passed, never reused, and every
// file in it written whole (temporary name, then rename).
#include <string>

namespace plait {

// --out, or runs/<config stem>-<YYYYmmdd-HHMMSS> under the working directory.
std::string choose_run_folder(const std::string& out, const std::string& config_path);

// Refuses a path that exists and is not an empty folder, or that cannot be made.
void check_run_folder(const std::string& path);
// Checks it, then creates it.
void create_run_folder(const std::string& path);

void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace plait
