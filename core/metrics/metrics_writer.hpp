#pragma once
// metrics.jsonl: one JSON object per optimizer step, flushed as it is written, so a
// run that dies still leaves every finished step on disk.
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "plait/sdk/context.hpp"

namespace plait {

// Collects what plugins report during a step (SDK Metrics), keyed "<plugin>.<name>".
class StepMetrics {
 public:
  // A Metrics that prefixes its names with `plugin`.
  std::unique_ptr<Metrics> for_plugin(const std::string& plugin);
  void gauge(const std::string& key, double value);
  void count(const std::string& key, double amount);
  // Everything reported since the last drain.
  std::map<std::string, double> drain();

 private:
  std::mutex mutex_;
  std::map<std::string, double> values_;
};

class MetricsWriter {
 public:
  explicit MetricsWriter(const std::string& path);
  void write(const nlohmann::ordered_json& record);

 private:
  std::string path_;
  std::ofstream out_;
};

}  // namespace plait
