#pragma once
// The peak FLOP/s that MFU divides by, when [train] peak_flops is left at its default on a
// GPU: the dense tensor-core (bf16, float16) or plain (float32, float64) peak of the GPU
// model the node reports, from its maker's data sheet. Left at the default, MFU on a GPU
// would be read against 1 TFLOP/s, about 1000 times too high.
#include <optional>
#include <string>

namespace plait {

struct TrainSettings;

// [train] peak_flops's schema default: "not set".
constexpr double kDefaultPeakFlops = 1e12;

// The peak of a GPU model ("NVIDIA H100 80GB HBM3", as nvidia-smi names it) for `dtype`
// ("bfloat16", "float32", ...), with the data sheet it comes from; nullopt for a model
// not in the table.
struct KnownPeak {
  double flops = 0.0;
  std::string model;   // the table's name for it: "H100 SXM"
  std::string source;  // the data sheet
};
std::optional<KnownPeak> known_peak_flops(const std::string& gpu_model, const std::string& dtype);

// The model of this node's first GPU, from the NVIDIA driver's /proc entries or nvidia-smi;
// "" when neither names one.
std::string local_gpu_model();

// What MFU divides by: peak_flops as set, or on a CUDA device left at the default, the
// known peak of the node's GPU for the run's dtype (the default when the model is unknown).
struct PeakChoice {
  double flops = kDefaultPeakFlops;
  bool looked_up = false;          // the GPU's model was asked for (CUDA, peak_flops left at its default)
  std::string gpu_model;           // what the node reported ("" when nothing)
  std::optional<KnownPeak> known;  // its row of the table, when it has one
};
PeakChoice choose_peak_flops(const TrainSettings& train);
inline double effective_peak_flops(const TrainSettings& train) { return choose_peak_flops(train).flops; }

}  // namespace plait
