#include "metrics/metrics_records.hpp"

#include <filesystem>
#include <fstream>

#include "plait/sdk/error.hpp"

namespace plait {

std::vector<nlohmann::json> read_metrics_records(const std::string& run_dir) {
  const std::filesystem::path path = std::filesystem::path(run_dir) / "metrics.jsonl";
  std::ifstream in(path);
  PLAIT_CHECK(in.good(), concat("no ", path.string()), "the run did not get to its first step: see its log");
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

}  // namespace plait
