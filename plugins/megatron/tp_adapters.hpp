#pragma once
// Adapters inside megatron's split products (the AdapterHost extension, adapter.hpp): an
// adapter beside a column-parallel linear reads the same whole input and adds to this
// rank's output columns; beside a row-parallel linear it reads this rank's input columns
// and adds to the partial sums before they are reduced. No communication is added to the
// forward.
#include <memory>
#include <vector>

#include "plait/sdk/adapter.hpp"
#include "tp_layers.hpp"

namespace plait::megatron {

std::shared_ptr<Layer> adapted_linears(const std::vector<LinearSpec>& parts, const InitSpec& init,
                                       const AdapterMaker& adapter, const TpPlace& tp);

}  // namespace plait::megatron
