#include "train/initial_weights.hpp"

#include <filesystem>
#include <map>

#include <ATen/ATen.h>

#include "checkpoint/checkpoint_files.hpp"
#include "checkpoint/state_parts.hpp"
#include "io/hf_weights.hpp"
#include "log/logging.hpp"

namespace plait {
namespace fs = std::filesystem;
namespace {

// A Hugging Face folder as a source of parameters: each whole tensor read once, then
// cut into the pieces this rank's slice covers.
class HfStateSource final : public StateSource {
 public:
  HfStateSource(const HfWeights& weights, const checkpoint::Layouts& layouts) : weights_(weights), layouts_(layouts) {}
  void read_into(const at::Tensor& into, const std::string& param, const std::string& kind, int64_t start) override {
    PLAIT_CHECK(has(param, kind), concat(weights_.folder().string(), " has no tensor ", param),
                "the folder holds another model");
    const at::Tensor whole = weights_.load(param);
    const at::Tensor flat = into.view({-1});
    for (const auto& piece : checkpoint::pieces_of(layouts_.at(param), start, into.numel())) {
      const checkpoint::Region& r = piece.global;
      at::Tensor region = r.flat ? whole.reshape({-1}).narrow(0, r.start, r.length) : whole;
      for (std::size_t d = 0; !r.flat && d < r.offsets.size(); ++d) region = region.narrow(static_cast<int64_t>(d), r.offsets[d], r.lengths[d]);
      at::Tensor target = piece.of(flat);
      target.copy_(region.reshape(target.sizes()));
    }
  }
  bool has(const std::string& param, const std::string& kind) const override {
    return kind == state_kind::param && weights_.has(param);
  }

 private:
  const HfWeights& weights_;
  const checkpoint::Layouts& layouts_;
};

// Frozen ones too: a fine-tuning's base. An adapter's parameters (the trainable ones
// beside a frozen base) the source lacks keep their initial values.
void load_all(StateSource& source, const StageModel& model, bool adapter) {
  at::NoGradGuard no_grad;
  for (const auto& p : model.all_parameters()) {
    if (p.tensor.is_meta()) continue;
    if (adapter && p.tensor.requires_grad() && !source.has(p.name, state_kind::param)) continue;
    source.read_into(p.tensor.detach(), p.name, state_kind::param, 0);
  }
}

}  // namespace

void load_initial_weights(const std::string& path, const ModelSpec& spec, const StageModel& model, const Mesh& mesh,
                          bool adapter) {
  const checkpoint::Layouts layouts = checkpoint::layouts_of(model, mesh.shape().tp, mesh.coords().tp);
  if (is_hf_folder(path)) {
    const HfWeights weights(path, spec.family);
    HfStateSource source(weights, layouts);
    load_all(source, model, adapter);
  } else {
    checkpoint::CheckpointReader reader(checkpoint::resolve_checkpoint(path));
    checkpoint::CheckpointStateSource source(reader, layouts);
    load_all(source, model, adapter);
  }
  core_log().info("initial weights from ", path, " (", layouts.size(), " parameters of this rank)");
}

}  // namespace plait
