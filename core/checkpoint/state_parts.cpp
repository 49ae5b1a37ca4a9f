#include "checkpoint/state_parts.hpp"

#include <ATen/ATen.h>

#include "plait/sdk/error.hpp"

namespace plait::checkpoint {
namespace {

const LocalLayout& layout_of(const Layouts& layouts, const std::string& param, const std::string& who) {
  const auto it = layouts.find(param);
  PLAIT_CHECK(it != layouts.end(), concat(who, " names parameter '", param, "', which this rank does not hold"),
              "state parts must name the rank's own parameters (ParamRef::name)");
  return it->second;
}

TensorPart part_of(const Region& r) {
  TensorPart p;
  p.flat = r.flat;
  p.start = r.start;
  p.length = r.length;
  p.offsets = r.offsets;
  p.lengths = r.lengths;
  return p;
}

}  // namespace

Layouts layouts_of(const StageModel& model, int64_t tp, int64_t tp_rank) {
  Layouts out;
  for (const auto& p : model.all_parameters()) {
    if (!p.tensor.is_meta()) out[p.name] = {p.tensor.sizes().vec(), p.split, tp, tp_rank};
  }
  return out;
}

std::string state_tensor_name(const std::string& kind, const std::string& param) { return kind + "/" + param; }

std::vector<OwnedPart> owned_parts(const std::vector<StatePart>& parts, const Layouts& layouts, const std::string& plugin) {
  std::vector<OwnedPart> out;
  for (const StatePart& part : parts) {
    const LocalLayout& layout = layout_of(layouts, part.param, concat("data plugin '", plugin, "'"));
    PLAIT_CHECK(part.replicas >= 1 && part.replica >= 0 && part.replica < part.replicas,
                concat("data plugin '", plugin, "': state part of ", part.param, " is replica ", part.replica, " of ",
                       part.replicas),
                "replica must lie in [0, replicas)");
    int64_t replicas = part.replicas, replica = part.replica;
    if (layout.whole() && layout.tp > 1) {  // every tp rank holds it too
      replicas *= layout.tp;
      replica = replica * layout.tp + layout.tp_rank;
    }
    const at::Tensor flat = part.values.detach().reshape({-1});
    const int64_t n = flat.numel(), a = n * replica / replicas, b = n * (replica + 1) / replicas;
    const at::Tensor run = flat.narrow(0, a, b - a);
    const std::string name = state_tensor_name(part.kind, part.param);
    for (const Piece& piece : pieces_of(layout, part.start + a, b - a)) {
      at::Tensor values = piece.of(run);
      const bool borrowed = values.is_cpu();
      if (!borrowed) values = at::empty(values.sizes(), values.options().device(at::kCPU).pinned_memory(true)).copy_(values);
      out.push_back({name, layout.global_shape(), part_of(piece.global), values, borrowed});
    }
  }
  return out;
}

void CheckpointStateSource::read_into(const at::Tensor& into, const std::string& param, const std::string& kind,
                                      int64_t start) {
  PLAIT_CHECK(into.is_contiguous(), concat("checkpoint: the tensor to load ", kind, " of ", param, " into is not contiguous"),
              "load into a contiguous tensor (or a narrow of a flat one)");
  const LocalLayout& layout = layout_of(layouts_, param, "the data plugin's load");
  const std::string name = state_tensor_name(kind, param);
  PLAIT_CHECK(has(param, kind), concat("checkpoint ", reader_.folder().string(), " holds no ", kind, " of ", param),
              "it was saved by a plugin that keeps other state; resume with that plugin or start the run afresh");
  at::NoGradGuard no_grad;
  const at::Tensor flat = into.view({-1});
  const at::ScalarType stored = reader_.dtype_of(name);
  for (const Piece& piece : pieces_of(layout, start, into.numel())) {
    at::Tensor target = piece.of(flat);
    if (target.is_cpu() && target.is_contiguous() && target.scalar_type() == stored) {
      reader_.read_into(name, piece.global, target);  // straight into the plugin's memory
    } else {
      target.copy_(reader_.read(name, piece.global).view(target.sizes()));
    }
  }
}

bool CheckpointStateSource::has(const std::string& param, const std::string& kind) const {
  return reader_.index().tensors.count(state_tensor_name(kind, param)) > 0;
}

}  // namespace plait::checkpoint
