#pragma once
// Options are immutable once resolved; a check that needs a table with some values
// filled in (the mesh degrees resolved, an old name replaced) makes a copy.
#include <string>
#include <tuple>
#include <vector>

#include "plait/sdk/options.hpp"

namespace plait {

struct OptionChange {
  std::string key;
  OptionValue value;
  std::string place;  // where the new value came from, for messages (Options::where)
};

// `base` with some values replaced; every other value keeps its place and default flag.
Options with_values(const Options& base, const std::vector<OptionChange>& changes);

}  // namespace plait
