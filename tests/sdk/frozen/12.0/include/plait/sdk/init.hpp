#pragma once
// Deterministic, layout-independent initialisation: every parameter is drawn from its
// own generator seeded by (run seed, parameter name), always in float32 on the CPU, then
// cast and placed. A strategy that shards a parameter draws the full tensor and keeps
// its slice, so every strategy starts from exactly the single-process weights.
#include <cstdint>
#include <string_view>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

namespace plait {

inline uint64_t name_seed(uint64_t seed, std::string_view name) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : name) {
    h ^= c;
    h *= 1099511628211ull;
  }
  uint64_t z = h ^ (seed + 0x9e3779b97f4a7c15ull);  // splitmix64 finaliser
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

inline at::Tensor seeded_normal(at::IntArrayRef shape, double std, uint64_t seed,
                                std::string_view name, const at::TensorOptions& options) {
  if (options.device().is_meta()) return at::empty(shape, options);
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(name_seed(seed, name));
  at::Tensor t = at::empty(shape, at::TensorOptions().dtype(at::kFloat));
  t.normal_(0.0, std, gen);
  return t.to(options);
}

inline at::Tensor filled(at::IntArrayRef shape, double value, const at::TensorOptions& options) {
  if (options.device().is_meta()) return at::empty(shape, options);
  return at::full(shape, value, options);
}

}  // namespace plait
