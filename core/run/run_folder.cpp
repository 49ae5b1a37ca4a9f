#include "run/run_folder.hpp"

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "plait/sdk/error.hpp"

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

void check_run_folder(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (fs::exists(status)) {
    PLAIT_CHECK(fs::is_directory(status), concat("the run folder ", path, " exists and is not a folder"),
                "choose another --out");
    PLAIT_CHECK(fs::is_empty(path, ec), concat("the run folder ", path, " already exists and is not empty"),
                "choose another --out; plait never writes into an earlier run");
    return;
  }
  // The nearest folder that exists must let us make the rest.
  fs::path parent = fs::absolute(path).parent_path();
  while (!parent.empty() && !fs::exists(parent, ec)) parent = parent.parent_path();
  PLAIT_CHECK(fs::is_directory(parent, ec),
              concat("cannot create the run folder ", path, ": ", parent.string(), " is not a folder"),
              "choose another --out");
  PLAIT_CHECK(::access(parent.c_str(), W_OK | X_OK) == 0,
              concat("cannot create the run folder ", path, ": ", parent.string(), " is not writable"),
              "choose another --out, or check the permissions");
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

void write_file_atomically(const std::string& path, const std::string& text) {
  // The writer's pid in the temporary name: two processes may write one file (status.json).
  const std::string tmp = concat(path, ".partial.", ::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    PLAIT_CHECK(out.good(), concat("cannot write ", tmp), "check free space and permissions");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  PLAIT_CHECK(!ec, concat("cannot write ", path, ": ", ec.message()), "check free space and permissions");
}

}  // namespace plait
