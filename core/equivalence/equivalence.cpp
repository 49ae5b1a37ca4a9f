#include "equivalence/equivalence.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "equivalence/tolerance.hpp"
#include "io/safetensors.hpp"
#include "metrics/metrics_records.hpp"
#include "plait/sdk/error.hpp"

namespace plait {
namespace fs = std::filesystem;

std::vector<double> run_losses(const std::string& dir) {
  std::vector<double> out;
  for (const auto& record : read_metrics_records(dir)) out.push_back(record.at("loss").get<double>());
  return out;
}

double EquivalenceReport::worst_loss() const {
  double w = 0.0;
  for (const auto& l : losses) w = std::max(w, l.relative);
  return w;
}

double EquivalenceReport::worst_grad() const {
  double w = 0.0;
  for (const auto& g : grads) w = std::max(w, g.relative);
  return w;
}

std::string EquivalenceReport::to_json() const {
  nlohmann::ordered_json j;
  j["passed"] = passed();
  j["tolerance"] = tolerance;
  j["worst_loss_relative"] = worst_loss();
  j["worst_grad_relative"] = worst_grad();
  j["failures"] = failures;
  for (const auto& l : losses) {
    j["losses"].push_back({{"step", l.step}, {"candidate", l.candidate}, {"reference", l.reference},
                           {"relative", l.relative}});
  }
  for (const auto& g : grads) {
    j["grads"].push_back({{"name", g.name}, {"relative", g.relative}, {"reference_norm", g.reference_norm}});
  }
  return j.dump(2);
}

EquivalenceReport equivalence_of(const std::string& candidate_dir, const std::string& reference_dir, double tolerance) {
  EquivalenceReport report;
  report.tolerance = tolerance;
  const auto a = run_losses(candidate_dir), b = run_losses(reference_dir);
  if (a.size() != b.size()) {
    report.failures.push_back(concat("the candidate ran ", a.size(), " steps, the reference ", b.size()));
  }
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    const double r = relative_difference(a[i], b[i]);
    report.losses.push_back({static_cast<int64_t>(i + 1), a[i], b[i], r});
    if (!(r <= tolerance)) {
      report.failures.push_back(concat("step ", i + 1, " loss ", a[i], " vs ", b[i], " (relative ", r, ")"));
    }
  }
  std::map<std::string, at::Tensor> reference;
  for (auto& [name, t] : load_safetensors((fs::path(reference_dir) / "debug_grads.safetensors").string())) {
    reference[name] = t.to(at::kDouble);
  }
  std::map<std::string, bool> seen;
  for (auto& [name, t] : load_safetensors((fs::path(candidate_dir) / "debug_grads.safetensors").string())) {
    auto it = reference.find(name);
    if (it == reference.end()) {
      report.failures.push_back(concat("the candidate has a gradient for '", name, "', the reference does not"));
      continue;
    }
    seen[name] = true;
    if (t.sizes() != it->second.sizes()) {
      report.failures.push_back(concat("gradient '", name, "' has shape ", t.sizes(), " vs ", it->second.sizes()));
      continue;
    }
    const double ref_norm = at::linalg_vector_norm(it->second, 2).item<double>();
    const double diff = at::linalg_vector_norm(t.to(at::kDouble) - it->second, 2).item<double>();
    const double r = ref_norm > 0 ? diff / ref_norm : diff;  // ||a - b|| / ||b||, as relative_difference
    report.grads.push_back({name, r, ref_norm});
    if (!(r <= tolerance)) {
      report.failures.push_back(concat("gradient '", name, "' differs by ", r, " (relative)"));
    }
  }
  for (const auto& [name, t] : reference) {
    if (!seen.count(name)) report.failures.push_back(concat("the candidate has no gradient for '", name, "'"));
  }
  return report;
}

}  // namespace plait
