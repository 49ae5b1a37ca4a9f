#pragma once
// Whether someone else could change a file plait is about to trust: a plugin it loads (its
// code runs in the job) or a bundle it reads (its settings shape the job). Whoever can
// write the file, or the folder it is found in (a new or replaced file), could; so could
// its owner, when that is another user (not root). One rule for both, as ssh's for keys.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "plait/sdk/error.hpp"

namespace plait {

// "" when only this user or root could change it; else why not, and `consequence` (what
// such a writer could do), with the fix: "the file can be written by others (mode 666),
// so <consequence>; chmod go-w <path>".
inline std::string others_can_write(const std::filesystem::path& file, const std::string& consequence) {
  const std::filesystem::path folder = file.parent_path().empty() ? std::filesystem::path(".") : file.parent_path();
  for (const std::filesystem::path& path : {file, folder}) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) continue;
    const std::string what = path == file ? "the file" : concat("its folder ", path.string());
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
      char mode[8];
      std::snprintf(mode, sizeof(mode), "%03o", static_cast<unsigned>(st.st_mode & 0777));
      return concat(what, " can be written by others (mode ", mode, "), so ", consequence, "; chmod go-w ", path.string());
    }
    if (st.st_uid != 0 && st.st_uid != ::geteuid()) {
      return concat(what, " belongs to another user (uid ", st.st_uid, "), who could change it, so ", consequence);
    }
  }
  return "";
}

}  // namespace plait
