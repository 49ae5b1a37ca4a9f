#pragma once
// Numbers on the command line, read by plait rather than by CLI11: a value out of range
// or not a number is one sentence naming the flag (with the value abbreviated), never a
// silently saturated integer or a 309-digit echo.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace plait::cli {

// An integer in [min, max]; nothing when the flag was absent.
std::optional<int64_t> integer_flag(const std::string& flag, const std::optional<std::string>& text, int64_t min,
                                    int64_t max);
// Comma-separated integers, each in [min, max]; empty when the flag was absent.
std::vector<int64_t> integer_list_flag(const std::string& flag, const std::optional<std::string>& text, int64_t min,
                                       int64_t max);
// A finite number above 0; nothing when the flag was absent.
std::optional<double> positive_number_flag(const std::string& flag, const std::optional<std::string>& text);

}  // namespace plait::cli
