#include "model/recorded_linears.hpp"

namespace plait {

// A linear's matrices are its two-dimensional parameters (an adapter's among them, which
// stay trainable and so are never stored apart).
std::shared_ptr<Layer> RecordedLinears::recorded(std::shared_ptr<Layer> layer) {
  for (const auto& p : layer->parameters()) {
    if (p.dim() == 2) weights_.insert(p.unsafeGetTensorImpl());
  }
  return layer;
}

std::shared_ptr<Layer> RecordedLinears::linear(const LinearSpec& spec, const InitSpec& init) {
  return recorded(inner_->linear(spec, init));
}

std::shared_ptr<Layer> RecordedLinears::fused_linear(const std::vector<LinearSpec>& parts, const InitSpec& init) {
  return recorded(inner_->fused_linear(parts, init));
}

}  // namespace plait
