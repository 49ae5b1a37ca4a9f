#include "config/options_edit.hpp"

#include <map>

namespace plait {

Options with_values(const Options& base, const std::vector<OptionChange>& changes) {
  std::map<std::string, OptionValue> values = base.values();
  std::map<std::string, std::string> places;
  std::map<std::string, bool> defaults;
  for (const auto& [key, value] : values) {
    places[key] = base.where(key);
    defaults[key] = base.is_default(key);
  }
  for (const auto& change : changes) {
    values[change.key] = change.value;
    places[change.key] = change.place;
  }
  return Options(base.table(), std::move(values), std::move(places), std::move(defaults));
}

}  // namespace plait
