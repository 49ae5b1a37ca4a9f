#include "output/run_folder.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "io/written_stream.hpp"
#include "plait/sdk/error.hpp"
#include "util/writable_folder.hpp"

namespace plait {
namespace fs = std::filesystem;

std::string choose_run_folder(const std::string& out, const std::string& config_path) {
  if (!out.empty()) return out;
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
  return (fs::path("runs") / (fs::path(config_path).stem().string() + "-" + stamp)).string();
}

void check_new_folder(const std::string& path, const std::string& noun, const std::string& flag,
                      const std::string& promise) {
  PLAIT_CHECK(!path.empty(), concat(flag, " \"\": ", noun, "'s path is empty"), concat("name a folder with ", flag));
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (fs::exists(status)) {
    PLAIT_CHECK(fs::is_directory(status), concat(noun, " ", path, " exists and is not a folder"), concat("choose another ", flag));
    PLAIT_CHECK(fs::is_empty(path, ec), concat(noun, " ", path, " already exists and is not empty"),
                concat("choose another ", flag, "; ", promise));
    return;
  }
  // The nearest folder that exists must let us make the rest.
  fs::path parent = fs::absolute(path).parent_path();
  while (!parent.empty() && !fs::exists(parent, ec)) parent = parent.parent_path();
  PLAIT_CHECK(fs::is_directory(parent, ec), concat("cannot create ", noun, " ", path, ": ", parent.string(), " is not a folder"),
              concat("choose another ", flag));
  // A real write, not access(): root passes that everywhere, and /proc or a read-only mount refuse anyway.
  const std::string problem = folder_write_problem(parent);
  PLAIT_CHECK(problem.empty(), concat("cannot create ", noun, " ", path, ": ", parent.string(), " is not writable (", problem, ")"),
              concat("choose another ", flag, ", or check the permissions"));
}

void check_run_folder(const std::string& path) {
  check_new_folder(path, "the run folder", "--out", "plait never writes into an earlier run");
}

void create_run_folder(const std::string& path) {
  check_run_folder(path);
  std::error_code ec;
  if (fs::exists(path, ec)) return;
  fs::create_directories(path, ec);
  PLAIT_CHECK(!ec, concat("cannot create the run folder ", path, ": ", ec.message()), "check the path and permissions");
}

void reuse_run_folder(const std::string& path, int64_t resume_step) {
  const fs::path metrics = fs::path(path) / "metrics.jsonl";
  if (!fs::exists(metrics)) return;
  std::ifstream in(metrics);
  std::string kept, line;
  while (std::getline(in, line)) {
    const auto at = line.find("\"step\":");
    if (at != std::string::npos && std::stoll(line.substr(at + 7)) <= resume_step) kept += line + "\n";
  }
  write_file_atomically(metrics.string(), kept);
}

void check_file_can_be_written(const std::string& path) {
  const fs::path file(path);
  const fs::path parent = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  std::error_code ec;
  PLAIT_CHECK(fs::is_directory(parent, ec), concat("cannot write ", path, ": the folder ", parent.string(), " does not exist"),
              concat("create ", parent.string(), " first, or name a file in a folder that exists"));
  PLAIT_CHECK(!fs::is_directory(file, ec), concat("cannot write ", path, ": it is a folder"), "name a file");
  PLAIT_CHECK(::access(parent.c_str(), W_OK) == 0,
              concat("cannot write ", path, ": the folder ", parent.string(), " is not writable (", std::strerror(errno), ")"),
              "name a file in a folder you can write");
}

void write_file_atomically(const std::string& path, const std::string& text) {
  check_file_can_be_written(path);
  // The writer's pid in the temporary name: two processes may write one file (status.json).
  const std::string tmp = concat(path, ".partial.", ::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    // Named as the user's file: the temporary one is plait's business.
    PLAIT_CHECK(out.is_open(), concat("cannot write ", path, ": ", std::strerror(errno)),
                "name a file in a folder you can write");
    out << text;
    check_written(out, tmp, "check the free space and permissions of its folder");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw Error(concat("cannot write ", path, ": ", ec.message()), "check the permissions of its folder");
  }
}

}  // namespace plait
