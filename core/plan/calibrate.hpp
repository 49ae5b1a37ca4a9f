#pragma once
// `plait plan --calibrate`: this machine measured (plan/calibrate_compute.hpp,
// plan/calibrate_links.hpp) and written as a hardware file, `cpu-local`, in which each of
// its CPU ranks is an accelerator: its GEMM throughput by size, its copy bandwidth (the
// memory-bound kernels', and the host link's), its AdamW rate, and the comm plugin's
// collectives between its ranks (one node: the same figures within and across).
#include <string>

#include "loader/plugin_registry.hpp"

namespace plait {

// The hardware file's text; `ranks`: the ranks a job of this machine runs (its cores).
std::string calibrate_machine(const PluginRegistry& registry, const std::string& comm_plugin, int ranks);

}  // namespace plait
