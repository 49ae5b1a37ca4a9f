#pragma once
// The command line in plait's words. Numbers are read by plait rather than by CLI11: a
// value out of range or not a number is one sentence naming the flag (with the value
// abbreviated), never a silently saturated integer or a 309-digit echo. And what CLI11
// itself refuses (a word it did not expect, a flag given twice, one of two flags missing)
// is said again as a sentence naming the user's word and the command.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
class ParseError;
}  // namespace CLI

namespace plait::cli {

// An integer in [min, max]; nothing when the flag was absent.
std::optional<int64_t> integer_flag(const std::string& flag, const std::optional<std::string>& text, int64_t min,
                                    int64_t max);
// Comma-separated integers, each in [min, max]; empty when the flag was absent.
std::vector<int64_t> integer_list_flag(const std::string& flag, const std::optional<std::string>& text, int64_t min,
                                       int64_t max);
// A finite number above 0; nothing when the flag was absent. The hint gives an example
// of the flag's own scale (--tolerance 1e-5, --shard-mb 5000).
std::optional<double> positive_number_flag(const std::string& flag, const std::optional<std::string>& text);
// A fraction above 0 and below 1 (a relative tolerance: at 1 or more it passes anything).
std::optional<double> fraction_flag(const std::string& flag, const std::optional<std::string>& text);

// "plait checkpoint diff": the subcommand the words chose (the deepest), as typed.
std::string chosen_command(const CLI::App& app);

// What CLI11 refused, as one sentence that names the command and the user's word or flag
// ("plait run has no option --stesp (did you mean '--steps'?)").
std::string usage_problem(const CLI::ParseError& e, const CLI::App& app);

}  // namespace plait::cli
