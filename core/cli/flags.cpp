#include "cli/flags.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "plait/sdk/error.hpp"
#include "util/abbreviate.hpp"

namespace plait::cli {

std::optional<int64_t> integer_flag(const std::string& flag, const std::optional<std::string>& text, int64_t min,
                                    int64_t max) {
  if (!text) return std::nullopt;
  const std::string shown = abbreviate(*text, 40);
  int64_t value = 0;
  const char* end = text->data() + text->size();
  const auto [ptr, ec] = std::from_chars(text->data(), end, value);
  PLAIT_CHECK(ec != std::errc::invalid_argument && ptr == end, concat(flag, " ", shown, ": expected a whole number"),
              concat(flag, " takes an integer from ", min, " to ", max));
  PLAIT_CHECK(ec != std::errc::result_out_of_range && value >= min && value <= max,
              concat(flag, " ", shown, " is out of range: it takes ", min, " to ", max),
              concat("give ", flag, " a whole number from ", min, " to ", max, ", or leave it out for the default"));
  return value;
}

std::vector<int64_t> integer_list_flag(const std::string& flag, const std::optional<std::string>& text, int64_t min,
                                       int64_t max) {
  std::vector<int64_t> out;
  if (!text) return out;
  std::size_t from = 0;
  while (from <= text->size()) {
    const std::size_t comma = std::min(text->find(',', from), text->size());
    out.push_back(*integer_flag(flag, text->substr(from, comma - from), min, max));
    from = comma + 1;
  }
  return out;
}

std::optional<double> positive_number_flag(const std::string& flag, const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  const std::string shown = abbreviate(*text, 40);
  char* end = nullptr;
  const double value = std::strtod(text->c_str(), &end);
  PLAIT_CHECK(!text->empty() && end == text->c_str() + text->size(), concat(flag, " ", shown, ": expected a number"),
              concat(flag, " takes a number above 0, e.g. 1e-6"));
  PLAIT_CHECK(std::isfinite(value) && value > 0.0, concat(flag, " ", shown, " must be a finite number above 0"),
              concat(flag, " takes a number above 0, e.g. 1e-6"));
  return value;
}

}  // namespace plait::cli
