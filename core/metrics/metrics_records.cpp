#include "metrics/metrics_records.hpp"

#include <filesystem>
#include <fstream>

#include "plait/sdk/error.hpp"
#include "util/json_problem.hpp"

namespace plait {

std::vector<nlohmann::json> read_metrics_records(const std::string& run_dir) {
  const std::filesystem::path path = std::filesystem::path(run_dir) / "metrics.jsonl";
  std::ifstream in(path);
  PLAIT_CHECK(in.good(), concat("no ", path.string()), "the run did not get to its first step: see its log");
  std::vector<nlohmann::json> out;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.empty()) continue;
    try {
      out.push_back(nlohmann::json::parse(line));
    } catch (const std::exception& e) {
      if (in.peek() == EOF) break;  // a run killed while writing leaves its last line short: dropped
      throw Error(concat(path.string(), ":", line_no, ": not a JSON record: ", json_problem(e)),
                  "the run's metrics were damaged after it wrote them");
    }
  }
  return out;
}

}  // namespace plait
