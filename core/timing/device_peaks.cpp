#include "timing/device_peaks.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "config/settings.hpp"

namespace plait {
namespace {

struct PeakRow {
  const char* model;
  std::array<const char*, 2> must_contain;  // in the reported name, case-insensitive ("" : nothing more)
  double bf16_tflops, fp32_tflops, fp64_tflops;
  const char* source;
};

// First match wins: the PCIe H100 before the SXM one. The bf16 and fp32 figures of the
// GPUs configs/hardware also describes are held equal to those files by a test
// (test_step_time.cpp, "[peaks]"). Dense figures (no sparsity); fp32 is
// the CUDA cores' (PyTorch does not use TF32 for float32 matmuls unless asked), fp64 the
// tensor cores'.
constexpr PeakRow kPeaks[] = {
    {"H100 PCIe", {"h100", "pcie"}, 756.0, 51.2, 51.2, "NVIDIA H100 Tensor Core GPU data sheet (PCIe column)"},
    {"H100 SXM", {"h100", ""}, 989.4, 66.9, 66.9, "NVIDIA H100 Tensor Core GPU data sheet (SXM column)"},
    {"H200", {"h200", ""}, 989.4, 66.9, 66.9, "NVIDIA H200 Tensor Core GPU product brief (SXM)"},
    {"A100", {"a100", ""}, 312.0, 19.5, 19.5, "NVIDIA A100 Tensor Core GPU data sheet"},
    {"B200", {"b200", ""}, 2250.0, 75.0, 37.0, "NVIDIA DGX B200 data sheet, per GPU"},
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// /proc/driver/nvidia/gpus/<pci id>/information: "Model:   NVIDIA H100 80GB HBM3".
std::string model_from_driver() {
  std::error_code ec;
  std::vector<std::filesystem::path> gpus;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec)) gpus.push_back(entry.path());
  std::sort(gpus.begin(), gpus.end());
  for (const auto& gpu : gpus) {
    std::ifstream in(gpu / "information");
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("Model:", 0) == 0) return trim(line.substr(6));
    }
  }
  return "";
}

std::string model_from_nvidia_smi() {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(
      popen("nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null", "r"), pclose);
  if (!pipe) return "";
  char line[256] = {};
  if (std::fgets(line, sizeof(line), pipe.get()) == nullptr) return "";
  return trim(line);
}

}  // namespace

std::optional<KnownPeak> known_peak_flops(const std::string& gpu_model, const std::string& dtype) {
  const std::string name = lower(gpu_model);
  for (const PeakRow& row : kPeaks) {
    const bool matches = std::all_of(row.must_contain.begin(), row.must_contain.end(), [&](const char* part) {
      return std::string_view(part).empty() || name.find(part) != std::string::npos;
    });
    if (!matches) continue;
    const double tflops = dtype == "float32"   ? row.fp32_tflops
                          : dtype == "float64" ? row.fp64_tflops
                                               : row.bf16_tflops;  // bfloat16, float16
    return KnownPeak{tflops * 1e12, row.model, row.source};
  }
  return std::nullopt;
}

std::string local_gpu_model() {
  std::string model = model_from_driver();
  return model.empty() ? model_from_nvidia_smi() : model;
}

PeakChoice choose_peak_flops(const TrainSettings& train) {
  PeakChoice choice{.flops = train.peak_flops};
  if (train.peak_flops != kDefaultPeakFlops || train.device != "cuda") return choice;
  choice.looked_up = true;
  choice.gpu_model = local_gpu_model();
  choice.known = known_peak_flops(choice.gpu_model, train.dtype);
  if (choice.known) choice.flops = choice.known->flops;
  return choice;
}

}  // namespace plait
