#include "train/cuda_syncs.hpp"

#include <atomic>
#include <string_view>

#include <c10/cuda/CUDAFunctions.h>
#include <c10/util/Exception.h>

namespace plait {
namespace {

// The text c10::cuda::warn_or_error_on_sync gives its warning.
constexpr std::string_view kSyncWarning = "called a synchronizing CUDA operation";

std::atomic<void (*)()> counting{nullptr};
thread_local c10::WarningHandler* previous_here = nullptr;

class CountingHandler final : public c10::WarningHandler {
 public:
  void process(const c10::Warning& warning) override {
    if (warning.msg() == kSyncWarning) {
      if (auto* on_sync = counting.load(std::memory_order_relaxed)) {
        on_sync();
        return;
      }
    }
    if (previous_here != nullptr) {
      previous_here->process(warning);
    } else {
      c10::WarningHandler().process(warning);  // c10's own: to stderr
    }
  }
};

CountingHandler& handler() {
  static CountingHandler instance;  // outlives every thread that holds it
  return instance;
}

}  // namespace

bool watch_cuda_syncs(void (*on_sync)()) {
  counting.store(on_sync, std::memory_order_relaxed);
  c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_WARN);
  count_cuda_syncs_on_this_thread();
  return true;
}

void stop_watching_cuda_syncs() {
  c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED);
  counting.store(nullptr, std::memory_order_relaxed);
}

void count_cuda_syncs_on_this_thread() {
  // Asked again before each operator: a guard may have put another handler back since.
  c10::WarningHandler* current = c10::WarningUtils::get_warning_handler();
  if (current == &handler()) return;
  previous_here = current;
  c10::WarningUtils::set_warning_handler(&handler());
}

}  // namespace plait
