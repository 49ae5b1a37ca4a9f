#include "loader/host_abi.hpp"

#include <torch/headeronly/version.h>

#include "plait/sdk/version.hpp"

namespace plait {

HostAbi host_abi() { return {PLAIT_API_MAJOR, PLAIT_API_MINOR, TORCH_VERSION, _GLIBCXX_USE_CXX11_ABI}; }

}  // namespace plait
