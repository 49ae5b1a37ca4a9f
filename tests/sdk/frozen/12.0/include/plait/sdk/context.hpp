#pragma once
// What every plugin receives from the runtime, through Plugin::configure: its own config
// table, a logger and a metrics sink. Nothing global: a plugin sees only what it is
// handed here and in its kind's setup calls.
#include <string>
#include <string_view>

#include "plait/sdk/error.hpp"
#include "plait/sdk/options.hpp"
#include "plait/sdk/version.hpp"

namespace plait {

enum class LogLevel { debug, info, warn, error };

class PLAIT_SDK_VISIBLE Logger {
 public:
  virtual ~Logger() = default;
  virtual void write(LogLevel level, std::string_view message) = 0;

  template <class... Args>
  void debug(const Args&... args) { write(LogLevel::debug, concat(args...)); }
  template <class... Args>
  void info(const Args&... args) { write(LogLevel::info, concat(args...)); }
  template <class... Args>
  void warn(const Args&... args) { write(LogLevel::warn, concat(args...)); }
};

// Per-step values that end up in metrics.jsonl under "<plugin>.<name>".
class PLAIT_SDK_VISIBLE Metrics {
 public:
  virtual ~Metrics() = default;
  // The last value set during a step is reported.
  virtual void gauge(std::string_view name, double value) = 0;
  // Amounts are summed over the step.
  virtual void count(std::string_view name, double amount) = 0;
};

// Host memory (offloaded model state) is counted apart from device memory. On a CPU-only
// run both are the same RAM, so what a thread allocates inside a HostMemoryScope is
// what counts as host; elsewhere the scope only keeps the books straight.
class PLAIT_SDK_VISIBLE MemoryDomain {
 public:
  virtual ~MemoryDomain() = default;
  // Makes this thread's allocations count as host memory (or not); returns the old setting.
  virtual bool set_host(bool host) = 0;
};

class HostMemoryScope {
 public:
  explicit HostMemoryScope(MemoryDomain* domain) : domain_(domain) {
    if (domain_ != nullptr) previous_ = domain_->set_host(true);
  }
  ~HostMemoryScope() {
    if (domain_ != nullptr) domain_->set_host(previous_);
  }
  HostMemoryScope(const HostMemoryScope&) = delete;
  HostMemoryScope& operator=(const HostMemoryScope&) = delete;

 private:
  MemoryDomain* domain_;
  bool previous_ = false;
};

// Made by the core and kept alive for as long as the plugin lives.
struct PLAIT_ABI_GROWS PluginContext {
  std::string plugin_name;
  const Options* options = nullptr;  // the plugin's own table, validated
  Logger* log = nullptr;
  Metrics* metrics = nullptr;  // null for comm plugins: the core counts their operations
  int rank = 0;        // global rank of this process
  int world_size = 1;  // number of processes in the job
  MemoryDomain* memory = nullptr;  // null where host and device memory are not told apart
};

}  // namespace plait
