#pragma once
// "did you mean" for misspelt keys, tables and plugin names.
#include <string>
#include <string_view>
#include <vector>

namespace plait {

// Edit distance (insert, delete, substitute, swap of neighbours).
std::size_t edit_distance(std::string_view a, std::string_view b);

// The closest candidate when it is close enough to be a plausible typo, else "".
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

// " (did you mean 'x'?)" or "".
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace plait
