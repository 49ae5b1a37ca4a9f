#include "run/run_folder.hpp"

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

void create_run_folder(const std::string& path) {
  std::error_code ec;
  if (fs::exists(path, ec)) {
    PLAIT_CHECK(fs::is_directory(path) && fs::is_empty(path),
                concat("the run folder ", path, " already exists and is not empty"),
                "choose another --out; plait never writes into an earlier run");
    return;
  }
  fs::create_directories(path, ec);
  PLAIT_CHECK(!ec, concat("cannot create the run folder ", path, ": ", ec.message()), "check the path and permissions");
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".partial";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    PLAIT_CHECK(out.good(), concat("cannot write ", tmp), "check free space and permissions");
  }
  fs::rename(tmp, path);
}

}  // namespace plait
