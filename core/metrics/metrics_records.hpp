#pragma once
// A run folder's metrics.jsonl read back, one JSON object per recorded step.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace plait {

// Refused, naming the file, when the run recorded no step.
std::vector<nlohmann::json> read_metrics_records(const std::string& run_dir);

}  // namespace plait
