#include "metrics/metrics_writer.hpp"

#include "plait/sdk/error.hpp"

namespace plait {
namespace {

class PrefixedMetrics final : public Metrics {
 public:
  PrefixedMetrics(StepMetrics& sink, std::string prefix) : sink_(sink), prefix_(std::move(prefix)) {}
  void gauge(std::string_view name, double value) override { sink_.gauge(prefix_ + "." + std::string(name), value); }
  void count(std::string_view name, double amount) override { sink_.count(prefix_ + "." + std::string(name), amount); }

 private:
  StepMetrics& sink_;
  std::string prefix_;
};

}  // namespace

std::unique_ptr<Metrics> StepMetrics::for_plugin(const std::string& plugin) {
  return std::make_unique<PrefixedMetrics>(*this, plugin);
}

void StepMetrics::gauge(const std::string& key, double value) {
  std::lock_guard<std::mutex> lock(mutex_);
  values_[key] = value;
}

void StepMetrics::count(const std::string& key, double amount) {
  std::lock_guard<std::mutex> lock(mutex_);
  values_[key] += amount;
}

std::map<std::string, double> StepMetrics::drain() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::map<std::string, double> out;
  out.swap(values_);
  return out;
}

MetricsWriter::MetricsWriter(const std::string& path) : path_(path), out_(path, std::ios::app) {
  PLAIT_CHECK(out_.good(), concat("cannot write ", path), "check that the run folder is writable");
}

void MetricsWriter::write(const nlohmann::ordered_json& record) {
  // A name that is not UTF-8 (a plugin's figure, a tag) is written with U+FFFD, not thrown on mid-run.
  out_ << record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  out_.flush();
  PLAIT_CHECK(out_.good(), concat("writing ", path_, " failed"), "check free disk space");
}

}  // namespace plait
