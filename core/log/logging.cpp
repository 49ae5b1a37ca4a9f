#include "log/logging.hpp"

#include <algorithm>
#include <vector>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/dist_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace plait {
namespace {

// Every logger writes to this one fan-out sink, so a file added later (once the run
// folder exists) receives the output of loggers made before it.
std::shared_ptr<spdlog::sinks::dist_sink_mt> fan_out() {
  static auto sink = [] {
    auto dist = std::make_shared<spdlog::sinks::dist_sink_mt>();
    auto console = std::make_shared<spdlog::sinks::stdout_sink_mt>();
    console->set_pattern("%v");
    dist->add_sink(console);
    dist->set_level(spdlog::level::info);  // until configure_logging says otherwise
    return dist;
  }();
  return sink;
}

std::vector<spdlog::sink_ptr>& file_sinks() {
  static std::vector<spdlog::sink_ptr> sinks;
  return sinks;
}

spdlog::level::level_enum to_spdlog(LogLevel level) {
  switch (level) {
    case LogLevel::debug: return spdlog::level::debug;
    case LogLevel::info: return spdlog::level::info;
    case LogLevel::warn: return spdlog::level::warn;
    case LogLevel::error: return spdlog::level::err;
  }
  return spdlog::level::info;
}

class SpdLogger final : public Logger {
 public:
  explicit SpdLogger(const std::string& name) : logger_(std::make_shared<spdlog::logger>(name, fan_out())) {
    logger_->set_level(spdlog::level::trace);  // the fan-out sink's level decides
    // Every line reaches the files at once: a rank that is killed leaves its log up to its
    // last line (a step's few lines cost nothing to flush).
    logger_->flush_on(spdlog::level::trace);
  }
  void write(LogLevel level, std::string_view message) override {
    const auto lvl = to_spdlog(level);
    if (lvl >= spdlog::level::warn) {
      logger_->log(lvl, "{}: {}", level == LogLevel::warn ? "warning" : "error", message);
    } else {
      logger_->log(lvl, "{}", message);
    }
  }

 private:
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace

OnlyWarnings::OnlyWarnings() : saved_(static_cast<int>(fan_out()->level())) {
  fan_out()->set_level(std::max(spdlog::level::warn, fan_out()->level()));
}

OnlyWarnings::~OnlyWarnings() { fan_out()->set_level(static_cast<spdlog::level::level_enum>(saved_)); }

void configure_logging(const std::string& file, bool verbose) {
  fan_out()->set_level(verbose ? spdlog::level::debug : spdlog::level::info);
  if (!file.empty()) add_log_file(file);
}

void add_log_file(const std::string& file) {
  auto f = std::make_shared<spdlog::sinks::basic_file_sink_mt>(file, /*truncate=*/false);
  f->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%n] [%l] %v");
  fan_out()->add_sink(f);
  file_sinks().push_back(f);
}

void write_log_files(LogLevel level, const std::string& message) {
  const spdlog::details::log_msg msg(spdlog::source_loc{}, "plait", to_spdlog(level), message);
  for (auto& sink : file_sinks()) {
    sink->log(msg);
    sink->flush();
  }
}

std::unique_ptr<Logger> make_logger(const std::string& name) { return std::make_unique<SpdLogger>(name); }

Logger& core_log() {
  static SpdLogger logger("plait");
  return logger;
}

void flush_logs() { fan_out()->flush(); }

}  // namespace plait
