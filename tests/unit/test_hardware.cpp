// The planner's hardware files: every shipped machine loads with its figures (one
// extending another), GEMM efficiency interpolates between the file's points, and a bad
// file is refused naming its line.
#include <catch2/catch.hpp>

#include <sstream>

#include "plait/sdk/error.hpp"
#include "plan/hardware.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using Catch::Matchers::WithinRel;

namespace {

// A machine that is an H100 node but for `text`'s tables.
fs::path h100_with(const TempDir& dir, const std::string& text) {
  return write_file(dir / "mine.toml",
                    concat("extends = \"", shipped_hardware_dir(), "/h100-sxm.toml\"\n", text));
}

}  // namespace

TEST_CASE("every shipped machine loads, with its figures, and h200 is an h100 with its own memory", "[plan]") {
  CHECK(shipped_hardware() == std::vector<std::string>{"a100-80g", "b200", "h100-sxm", "h200-sxm"});
  for (const auto& name : shipped_hardware()) {
    const Hardware h = load_hardware(name);
    INFO(name);
    CHECK(h.id == name);
    CHECK(h.gpus_per_node == 8);
    CHECK(h.intra_node.all_reduce.bus_gbps > h.inter_node.all_reduce.bus_gbps);
    CHECK(h.on_demand_per_gpu_hour.value_or(0) > h.reserved_per_gpu_hour.value_or(0));
    CHECK(h.sources.size() >= 3);
  }
  const Hardware a100 = load_hardware("a100-80g");
  CHECK(a100.peak_bf16_tflops == 312.0);
  CHECK(a100.inter_node.of(Collective::reduce_scatter).bus_gbps == 23.0);
  CHECK(a100.usable_memory_bytes() == 78.0 * 1024 * 1024 * 1024);
  const Hardware h200 = load_hardware("h200-sxm");
  CHECK(h200.peak_bf16_tflops == 989.4);  // from h100-sxm.toml
  CHECK(h200.memory_gib == 140.4);
  CHECK(h200.memory_gbps == 4800.0);
  CHECK(h200.on_demand_per_gpu_hour == 3.80);
  CHECK(h200.name == "8x H200 SXM 141GB per node, NDR InfiniBand (400 Gb/s per GPU)");
  // Defaults the files leave: Llama 3's interruption rate, the currency.
  CHECK(h200.interruptions_per_gpu_hour == 1.97e-5);
  CHECK(h200.currency == "USD");
}

TEST_CASE("GEMM efficiency is interpolated in log size between the file's points and held beyond them", "[plan]") {
  const Hardware a100 = load_hardware("a100-80g");  // 512: 0.30, 1024: 0.55, ... 8192: 0.83
  CHECK(a100.gemm_efficiency_at(512) == 0.30);
  CHECK_THAT(a100.gemm_efficiency_at(std::sqrt(512.0 * 1024.0)), WithinRel(0.425, 1e-12));
  CHECK_THAT(a100.gemm_efficiency_at(1024), WithinRel(0.55, 1e-12));
  CHECK(a100.gemm_efficiency_at(64) == 0.30);
  CHECK(a100.gemm_efficiency_at(65536) == 0.83);
}

TEST_CASE("a bad hardware file is refused naming its line and what to write", "[plan]") {
  TempDir dir;
  const auto refused = [&](const std::string& text) {
    try {
      load_hardware(h100_with(dir, text).string());
    } catch (const Error& e) {
      return std::string(e.what()) + "\n  hint: " + e.hint();
    }
    return std::string("accepted");
  };
  const std::string at = (dir / "mine.toml").string();
  CHECK_THAT(refused("[gpu]\npeak_bf16_tflop = 1.0\n"),
             StartsWith(at + ":3:1: unknown key 'peak_bf16_tflop' in [gpu]") && Contains("peak_bf16_tflops"));
  CHECK_THAT(refused("[gpus]\nmemory_gib = 1.0\n"),
             StartsWith(at + ":2:2: unknown table [gpus] in a hardware file (did you mean 'gpu'?)"));
  CHECK_THAT(refused("speed = 1\n"), StartsWith(at + ":2:1: 'speed' is outside any table of a hardware file"));
  CHECK_THAT(refused("[gpu]\ngemm_sizes = [512, 1024]\n"),
             StartsWith(at + ":3:1: [gpu] gemm_sizes has 2 sizes and gemm_efficiency 5 efficiencies"));
  CHECK_THAT(refused("[gpu]\ngemm_sizes = [1024, 512]\ngemm_efficiency = [0.5, 0.6]\n"),
             StartsWith(at + ":3:1: [gpu] gemm_sizes must be positive and ascending; 512 is not"));
  CHECK_THAT(refused("[gpu]\ngemm_sizes = [512]\ngemm_efficiency = [75.0]\n"),
             StartsWith(at + ":4:1: [gpu] gemm_efficiency 75 is not a fraction of the peak"));
  CHECK_THAT(refused("[gpu]\nreserved_gib = 80.0\n"), StartsWith(at + ":3:1: [gpu] reserved_gib 80 leaves nothing"));
  CHECK_THAT(refused("[inter_node]\nsend_gbps = -1.0\n"), StartsWith(at + ":3:1:") && Contains("send_gbps"));
  CHECK_THAT(refused("[node]\ngpus = \"eight\"\n"), StartsWith(at + ":3:1:") && Contains("gpus"));
  // A collective's measured times come with their sizes, as many, ascending.
  CHECK_THAT(refused("[intra_node]\nall_reduce_bus_kib = [4.0, 64.0]\n"),
             StartsWith(at + ":3:1: [intra_node] all_reduce_bus_kib has 2 sizes and all_reduce_times_us 0 times"));
  CHECK_THAT(refused("[intra_node]\nall_gather_bus_kib = [4.0, 64.0]\nall_gather_times_us = [30.0]\n"),
             StartsWith(at + ":3:1: [intra_node] all_gather_bus_kib has 2 sizes and all_gather_times_us 1 times"));
  CHECK_THAT(refused("[inter_node]\nsend_bus_kib = [64.0, 4.0]\nsend_times_us = [30.0, 40.0]\n"),
             StartsWith(at + ":3:1: [inter_node] send_bus_kib must be positive and ascending; 4 is not"));
  CHECK_THAT(refused("[inter_node]\nsend_bus_kib = [4.0, 64.0]\nsend_times_us = [30.0, 0.0]\n"),
             StartsWith(at + ":4:1: [inter_node] send_times_us 0 is not a time"));
  // A file of its own that leaves out a figure with no default.
  write_file(dir / "bare.toml", "[hardware]\nname = \"a box\"\n");
  CHECK_THROWS_WITH(load_hardware((dir / "bare.toml").string()),
                    StartsWith((dir / "bare.toml").string() + ":1:1: [gpu] needs 'gemm_efficiency'"));
}

TEST_CASE("a machine is named by a shipped name or a file, and another name is refused with the list", "[plan]") {
  CHECK_THROWS_WITH(load_hardware("h100"), Contains("no hardware named 'h100' (did you mean 'h100-sxm'?)"));
  try {
    load_hardware("tpu-v5");
    FAIL("accepted");
  } catch (const Error& e) {
    CHECK_THAT(e.hint(), Contains("the shipped machines are a100-80g, b200, h100-sxm, h200-sxm"));
  }
  CHECK_THROWS_WITH(load_hardware("nowhere/box.toml"), Contains("hardware file nowhere/box.toml does not exist"));
}

TEST_CASE("a hardware file says what its accelerators are to a run: [train] device, and the communicator", "[plan]") {
  for (const auto& name : shipped_hardware()) {
    const Hardware h = load_hardware(name);
    INFO(name);
    CHECK(h.device == "cuda");
    CHECK(h.comm == "nccl");
    CHECK(h.peak_tflops("bfloat16") == h.peak_bf16_tflops);
    CHECK(h.peak_tflops("float32") == h.peak_fp32_tflops);
  }
  TempDir dir;
  const Hardware cpus = load_hardware(h100_with(dir, "[hardware]\ndevice = \"cpu\"\n").string());
  CHECK(cpus.device == "cpu");
  CHECK(cpus.comm == "gloo");  // a CPU machine's default
  CHECK(load_hardware(h100_with(dir, "[hardware]\ncomm = \"mine\"\n").string()).comm == "mine");
  try {
    load_hardware(h100_with(dir, "[hardware]\ndevice = \"tpu\"\n").string());
    FAIL("a device plait cannot run on was accepted");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), StartsWith((dir / "mine.toml").string() + ":3:1:") && Contains("device"));
  }
}

TEST_CASE("a machine plait plan --calibrate measured before [hardware] device existed is read as CPU ranks", "[plan]") {
  TempDir dir;
  // A whole file as an older calibrate wrote it: no device line, its name marked calibrated.
  auto without_device = [&](const std::string& name) {
    std::istringstream shipped(read_file(fs::path(shipped_hardware_dir()) / "h100-sxm.toml"));
    std::string text;
    for (std::string line; std::getline(shipped, line);) {
      if (line.rfind("device", 0) == 0) continue;
      text += (line.rfind("name = ", 0) == 0 ? concat("name = \"", name, "\"") : line) + "\n";
    }
    return write_file(dir / "old.toml", text).string();
  };
  const Hardware old = load_hardware(without_device("this machine: 2 CPU ranks, 23.4 GiB (calibrated)"));
  CHECK(old.device == "cpu");
  CHECK(old.comm == "gloo");
  // A file that names no device and was not measured by plait is a GPU machine, as the schema says.
  const Hardware gpu = load_hardware(without_device("our H100s"));
  CHECK(gpu.device == "cuda");
}
