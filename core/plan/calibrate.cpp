#include "plan/calibrate.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "plan/calibrate_compute.hpp"
#include "plan/calibrate_links.hpp"
#include "output/run_status.hpp"
#include "plait/sdk/error.hpp"

namespace plait {
namespace {

std::string fixed(double x, int digits) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", digits, x);
  return text;
}

std::string list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out + "]";
}

double host_memory_gib() {
  return static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE)) /
         (1024.0 * 1024.0 * 1024.0);
}

std::string list(const std::vector<double>& values, int digits) {
  std::vector<std::string> items;
  for (const double v : values) items.push_back(fixed(v, digits));
  return list(items);
}

void links(std::ostringstream& out, const char* table, const LinkModel& m) {
  out << "\n[" << table << "]\n";
  struct Op {
    const char* name;
    const CollectiveCost* cost;
    const char* bandwidth;  // a send's is between two ranks, not a bus's
  };
  const Op ops[] = {{"all_reduce", &m.all_reduce, "_busbw_gbps"},
                    {"all_gather", &m.all_gather, "_busbw_gbps"},
                    {"reduce_scatter", &m.reduce_scatter, "_busbw_gbps"},
                    {"send", &m.send, "_gbps"}};
  for (const auto& [name, cost, bandwidth] : ops) {
    out << name << "_us = " << fixed(cost->latency_us, 1) << "\n"
        << name << bandwidth << " = " << fixed(cost->bus_gbps, 3) << "\n"
        << name << "_bus_kib = " << list(cost->bus_kib, 1) << "\n"
        << name << "_times_us = " << list(cost->times_us, 1) << "\n";
  }
}

}  // namespace

std::string calibrate_machine(const PluginRegistry& registry, const std::string& comm_plugin, int ranks) {
  const ComputeFigures c = measure_compute();
  const LinkFigures measured = measure_links(registry, comm_plugin, ranks);
  const LinkModel& l = measured.links;
  const double peak = *std::max_element(c.fp32_tflops.begin(), c.fp32_tflops.end());
  std::vector<std::string> sizes, efficiency;
  for (std::size_t i = 0; i < c.gemm_sizes.size(); ++i) {
    sizes.push_back(std::to_string(c.gemm_sizes[i]));
    efficiency.push_back(fixed(std::min(1.0, c.training_fp32_tflops[i] / peak), 3));
  }
  const double memory = host_memory_gib();
  std::ostringstream out;
  out << "# This machine as `plait plan --calibrate` measured it on " << utc_now() << ": each of its " << ranks
      << " CPU ranks\n# is an accelerator (one intra-op thread each, as plait runs them). Measure again after a\n"
      << "# change of machine; `plait plan --hardware cpu-local` reads it. Format: docs/planner.md.\n"
      << "[hardware]\nname = \"this machine: " << ranks << " CPU ranks, " << fixed(memory, 1)
      << " GiB (calibrated)\"\ndevice = \"cpu\"\ncomm = \"" << comm_plugin << "\"\nsources = [\n"
      << "  \"peaks: float32 square products, one thread, the best of 64-1024; bf16: the best of 256-1024\",\n"
      << "  \"gemm_efficiency: a linear layer's forward and two backward products over 1,024 tokens by input size, "
         "fresh outputs, operands out of the core's cache\",\n"
      << "  \"attention_efficiency: scaled_dot_product_attention forward and backward, causal, 32 heads of 64 x 256 "
         "positions\",\n"
      << "  \"activation_gelems: the tanh GELU's forward and backward over 1M float32 elements\",\n"
      << "  \"memory_gbps and host_link_gbps: a 128 MiB copy, bytes read and written\",\n"
      << "  \"adam_gbps and host_adam_gbps: AdamW's step over 8M float32 parameters (parameter, gradient, moments)\",\n"
      << "  \"" << measured.overlap_source << "\",\n"
      << "  \"links: " << comm_plugin << " between " << ranks
      << " ranks over loopback, 4 KiB (latency) and 32 MiB (bus bandwidth), and times at 64 KiB-4 MiB, means\",\n"
      << "  \"sync_skew_us_per_sqrt_ms: a 4 KiB all-reduce's wait beyond its latency after 2, 8 and 32 ms of products "
         "on each rank\",\n"
      << "]\n\n[gpu]\npeak_bf16_tflops = " << fixed(c.bf16_tflops, 6) << "\npeak_fp32_tflops = " << fixed(peak, 6)
      << "\ngemm_sizes = " << list(sizes) << "\ngemm_efficiency = " << list(efficiency)
      << "\nmemory_gib = " << fixed(memory / ranks, 2) << "\nreserved_gib = 0.5\nmemory_gbps = " << fixed(c.copy_gbps, 3)
      << "\nmemory_efficiency = 1.0\nadam_gbps = " << fixed(c.adam_gbps, 3)
      << "\nattention_efficiency = " << fixed(std::min(1.0, c.attention_tflops / peak), 3)
      << "\nactivation_gelems = " << fixed(c.gelu_gelems, 4) << "\n\n[node]\ngpus = " << ranks
      << "\nhost_memory_gib = " << fixed(memory, 2) << "\nhost_link_gbps = " << fixed(c.copy_gbps, 3)
      << "\nhost_adam_gbps = " << fixed(c.adam_gbps, 3) << "\ncomm_overlap = " << fixed(measured.overlap, 3)
      << "\nsync_skew_us_per_sqrt_ms = " << fixed(measured.skew_us_per_sqrt_ms, 1) << "\n";
  links(out, "intra_node", l);
  links(out, "inter_node", l);
  return out.str();
}

}  // namespace plait
