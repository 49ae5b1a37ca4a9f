#include <iostream>

#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/headeronly/version.h>

#include "cli/commands.hpp"
#include "plait/sdk/version.hpp"
#include "run/prepare.hpp"
#include "train/reproducible_math.hpp"

namespace plait::cli {

int version() {
  std::cout << "plait " << PLAIT_VERSION << "\n"
            << "LibTorch " << TORCH_VERSION << " (C++11 ABI " << _GLIBCXX_USE_CXX11_ABI << ")\n"
            << "plugin API " << PLAIT_API_VERSION_STRING << " (loads plugins built for " << PLAIT_API_MAJOR
            << ".0 to " << PLAIT_API_VERSION_STRING << ")\n";
  const auto& cuda = at::detail::getCUDAHooks();
  if (cuda.hasCUDA()) {
    const long v = cuda.versionCUDART();
    std::cout << "CUDA " << v / 1000 << "." << v % 1000 / 10 << ", " << cuda.getNumGPUs() << " device(s) visible\n";
  } else {
    std::cout << "CUDA: not available (" << (cuda.getNumGPUs() == 0 ? "no device visible, or " : "")
              << "a LibTorch without CUDA)\n";
  }
  std::cout << "CPU math: " << cpu_math_summary() << "\n";
  // What this machine can communicate with: each comm plugin's own probe (NCCL needs a GPU).
  const PluginRegistry registry = discover_plugins();
  std::string comms;
  for (const auto& p : registry.plugins()) {
    if (p.kind != "comm") continue;
    comms += (comms.empty() ? "" : ", ") + p.name + " " + p.version +
             (p.available ? " (available)" : " (unavailable: " + p.unavailable_reason + ")");
  }
  std::cout << "communicators: " << (comms.empty() ? "none found" : comms) << "\n";
  return 0;
}

}  // namespace plait::cli
