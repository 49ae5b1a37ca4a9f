// The metrics writers' inputs: a record whose names and values come from the input (as
// plugins' figures and tags do) is written to metrics.jsonl and as TensorBoard scalars,
// and metrics.jsonl is read back as compare and the summary read it.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "metrics/metrics_records.hpp"
#include "metrics/metrics_writer.hpp"
#include "metrics/tensorboard_events.hpp"
#include "plait/sdk/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const std::filesystem::path folder = [] {
    const auto f = std::filesystem::path("/tmp") / ("plait-fuzz-metrics-" + std::to_string(::getpid()));
    std::filesystem::create_directories(f);
    return f;
  }();
  // Pairs of (name, value): a name up to the next NUL, then 8 bytes of double.
  nlohmann::ordered_json record = {{"step", 1}};
  std::vector<std::pair<std::string, double>> scalars;
  std::size_t at = 0;
  while (at < size) {
    const auto* end = static_cast<const uint8_t*>(std::memchr(data + at, 0, size - at));
    const std::size_t name_end = end == nullptr ? size : static_cast<std::size_t>(end - data);
    std::string name(reinterpret_cast<const char*>(data + at), name_end - at);
    double value = 0.0;
    if (name_end + 1 + sizeof(double) <= size) std::memcpy(&value, data + name_end + 1, sizeof(double));
    at = name_end + 1 + sizeof(double);
    record[name] = value;
    scalars.emplace_back(std::move(name), value);
  }
  try {
    std::filesystem::remove(folder / "metrics.jsonl");
    {
      plait::MetricsWriter metrics((folder / "metrics.jsonl").string());
      metrics.write(record);
    }
    std::filesystem::remove_all(folder / "tb");
    plait::TensorBoardWriter tensorboard((folder / "tb").string(), 1);
    tensorboard.scalars(1, scalars);
    plait::read_metrics_records(folder.string());
  } catch (const plait::Error&) {
  }
  return 0;
}
