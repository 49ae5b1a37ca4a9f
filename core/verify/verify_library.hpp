#pragma once
// `plait verify`'s first rows, without running anything: the library (entry point, API
// version, LibTorch, C++ ABI, probe), its manifest, and its schema.
#include <vector>

#include "loader/plugin_registry.hpp"
#include "verify/verify_run.hpp"

namespace plait::verify {

std::vector<Outcome> library_checks(const PluginRecord& plugin, const HostAbi& host);

// The row of a library the loader refused (one sentence, naming the file).
Outcome refused_library(const Refusal& refusal);

}  // namespace plait::verify
