#pragma once
// The core's layer factory: plain dense layers, parameters drawn per name (see
// plait/sdk/init.hpp) so that any later sharding reproduces them exactly.
#include <memory>

#include "plait/sdk/layers.hpp"

namespace plait {

std::shared_ptr<LayerFactory> make_dense_layer_factory();

}  // namespace plait
