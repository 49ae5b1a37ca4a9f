#include "runtime/torch_info.hpp"

#include <torch/headeronly/version.h>

#include "plait/sdk/version.hpp"

namespace plait {

HostAbi host_abi() { return {PLAIT_API_VERSION, TORCH_VERSION, _GLIBCXX_USE_CXX11_ABI}; }

}  // namespace plait
