#pragma once
// Whether plait can write where the user pointed it, asked before any work whose result
// goes there. access(W_OK) is not the answer: root passes it on every folder, and a
// read-only mount, /proc or /sys refuse the write anyway. The only sure test is a write:
// a probe folder made and removed at once.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "plait/sdk/error.hpp"

namespace plait {

// The nearest folder that exists at or above `path` (`path` itself when it exists).
inline std::filesystem::path nearest_existing(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::path at = std::filesystem::absolute(path, ec).lexically_normal();
  while (!at.empty() && !std::filesystem::exists(at, ec) && at != at.root_path()) at = at.parent_path();
  return at;
}

// "" when a new entry can be made in `folder`; else the system's words for why not
// ("Read-only file system", "Permission denied", ...).
inline std::string folder_write_problem(const std::filesystem::path& folder) {
  const std::string probe = (folder / ".plait-write-check-XXXXXX").string();
  std::vector<char> name(probe.begin(), probe.end());
  name.push_back('\0');
  if (::mkdtemp(name.data()) == nullptr) {
    const int error = errno;
    // /proc answers "No such file or directory" of a folder that is there: it makes no entries.
    std::error_code ec;
    if (error == ENOENT && std::filesystem::is_directory(folder, ec)) return "the system makes no new entries in it";
    return std::strerror(error);
  }
  ::rmdir(name.data());
  return "";
}

// Refuses, naming `flag` and the path, a file path that is a folder, or whose folder does
// not exist or cannot be written.
inline void check_file_writable(const std::string& path, const std::string& flag) {
  namespace fs = std::filesystem;
  PLAIT_CHECK(!path.empty(), concat(flag, " \"\": the path is empty"), concat("name a file with ", flag));
  std::error_code ec;
  PLAIT_CHECK(!fs::is_directory(path, ec), concat(flag, " ", path, ": it is a folder, not a file"), "name a file");
  const fs::path folder = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  PLAIT_CHECK(fs::is_directory(folder, ec),
              concat(flag, " ", path, ": the folder ", folder.string(),
                     fs::exists(folder, ec) ? " is a file, not a folder" : " does not exist"),
              concat("create ", folder.string(), " first, or name a file in a folder that exists"));
  const std::string problem = folder_write_problem(folder);
  PLAIT_CHECK(problem.empty(), concat(flag, " ", path, ": the folder ", folder.string(), " is not writable (", problem, ")"),
              concat("give ", flag, " a file in a folder you can write"));
}

}  // namespace plait
