#pragma once
// A machine the planner plans for, read from a hardware file (configs/hardware/<name>.toml
// or any file, which may `extends` another to change a few figures): an accelerator's peak
// and achieved speed and its memory, what a node holds, an alpha-beta model of each
// collective within and across nodes (bus bandwidth as nccl-tests reports it), the price
// of an accelerator-hour and how often a job is interrupted. Format: docs/planner.md.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace plait {

enum class Collective { all_reduce, all_gather, reduce_scatter, send };

struct CollectiveCost {
  double latency_us = 0;
  double bus_gbps = 0;  // send: the bandwidth between the two ranks
  // Where measured: the time at each of some bus sizes (the bytes each rank moves, as
  // bus_gbps counts them), ascending; between them the time is interpolated, an
  // alpha-beta per size band (a mid-sized collective is not the line through a small
  // and a large one: gloo's 1 MiB all-reduce took 1.5-2.3 ms here, the line 1.2).
  std::vector<double> bus_kib, times_us;
};

struct LinkModel {
  CollectiveCost all_reduce, all_gather, reduce_scatter, send;
  const CollectiveCost& of(Collective c) const;
};

struct Hardware {
  std::string id;     // the file's name without .toml ("h100-sxm")
  std::string file;   // the file read
  std::string name;   // the machine in words
  std::vector<std::string> sources;
  // What a run on it sets: [train] device ("cuda" or "cpu") and [parallel] comm.
  std::string device = "cuda", comm = "nccl";

  double peak_bf16_tflops = 0, peak_fp32_tflops = 0;
  std::vector<int64_t> gemm_sizes;
  std::vector<double> gemm_efficiency;
  double memory_gib = 0, reserved_gib = 0, memory_gbps = 0, memory_efficiency = 0;
  std::optional<double> adam_gbps;  // the device's AdamW step, where measured
  std::optional<double> attention_efficiency;  // the fused attention's share of the peak, where measured
  std::optional<double> activation_gelems;     // the MLP activation's forward and backward rate, where compute-bound

  int64_t gpus_per_node = 0;
  double host_memory_gib = 0, host_link_gbps = 0, host_adam_gbps = 0;
  double comm_overlap = 1.0;  // the share of a collective that computation beside it hides
  double sync_skew_us_per_sqrt_ms = 0;  // a blocking collective's wait for its slowest member
  // That wait after `compute_s` seconds of computation since the group last synchronised.
  double sync_skew_seconds(double compute_s) const;

  LinkModel intra_node, inter_node;

  std::string currency;
  std::optional<double> on_demand_per_gpu_hour, reserved_per_gpu_hour;

  double interruptions_per_gpu_hour = 0, restart_minutes = 0, checkpoint_gbps = 0;

  // The achieved fraction of the peak for a GEMM whose smallest dimension is `size`:
  // interpolated in log size between the file's points, held beyond the first and last.
  double gemm_efficiency_at(double size) const;
  // Bytes a rank can hold in tensors.
  double usable_memory_bytes() const;
  // The peak a run in `dtype` ([train] dtype) is measured against: bf16's under autocast,
  // else fp32's (the file gives no other).
  double peak_tflops(const std::string& dtype) const;
};

// `name_or_path`: a machine's name (`plait plan --hardware h100-sxm`: this user's first,
// then the shipped ones) or a file.
// Every figure is checked (units in the names, bounds, gemm points ascending and as
// many as their efficiencies); errors name the file and line.
Hardware load_hardware(const std::string& name_or_path);

// The shipped hardware files' names, sorted, and the folder they are in.
std::vector<std::string> shipped_hardware();
std::string shipped_hardware_dir();
// This user's machines, named like the shipped ones and read first:
// $XDG_CONFIG_HOME/plait/hardware (or ~/.config/plait/hardware); empty without a home.
std::string user_hardware_dir();

}  // namespace plait
