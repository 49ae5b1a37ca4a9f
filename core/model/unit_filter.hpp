#pragma once
// Which units of a model get real parameters when it is built (by index: the embedding
// 0, blocks 1..n_layer, the head n_layer + 1). A pipeline rank materialises only its
// stages' units (and those whose parameters they borrow); the rest are built on the meta
// device, shapes without memory, so no rank ever holds the whole model.
#include <cstddef>
#include <functional>

#include "plait/sdk/layers.hpp"

namespace plait {

using UnitFilter = std::function<bool(std::size_t unit)>;  // empty: every unit

inline InitSpec init_for_unit(const InitSpec& init, const UnitFilter& materialise, std::size_t unit) {
  if (!materialise || materialise(unit)) return init;
  return {init.seed, at::TensorOptions(init.options).device(at::kMeta)};
}

}  // namespace plait
