#pragma once
// Figures that differ by rank, and what a metrics record keeps of them: a summary across
// ranks (min, median, max, and which rank had the min and the max), and, where few
// enough or asked for, every rank's own record. The summary's size does not grow with
// the number of ranks.
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace plait {

// One rank's figures, in an order every rank shares (the summary pairs them by position).
using RankFigures = std::vector<std::pair<std::string, double>>;

// A number as JSON: a whole number within float64's exact range as an integer.
nlohmann::ordered_json json_number(double value);

// Per-operation figures ("time.comm_exposed.<axis>.<op>_ms") are kept only where some rank
// has a non-zero value: every rank carries every axis and operation, most unused.
bool is_sparse_figure(const std::string& name);

// {"<figure>": {"min", "min_rank", "median", "max", "max_rank"}} over `ranks` (index = rank).
// The median is the middle rank's value (the lower of the two middles for an even count).
nlohmann::ordered_json rank_summary(const std::vector<RankFigures>& ranks);

// [{"rank": r, "<figure>": value, ...}, ...].
nlohmann::ordered_json rank_records(const std::vector<RankFigures>& ranks);

}  // namespace plait
