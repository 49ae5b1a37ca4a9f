#include "metrics/rank_summary.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>

namespace plait {

nlohmann::ordered_json json_number(double value) {
  if (std::isfinite(value) && std::floor(value) == value && std::fabs(value) < 9007199254740992.0) {
    return static_cast<int64_t>(value);
  }
  return value;
}

bool is_sparse_figure(const std::string& name) { return name.rfind("time.comm_exposed.", 0) == 0; }

namespace {

bool used_anywhere(const std::vector<RankFigures>& ranks, std::size_t i) {
  return std::any_of(ranks.begin(), ranks.end(), [i](const RankFigures& r) { return r[i].second != 0.0; });
}

}  // namespace

nlohmann::ordered_json rank_summary(const std::vector<RankFigures>& ranks) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  if (ranks.empty()) return out;
  std::vector<std::size_t> order(ranks.size());
  for (std::size_t i = 0; i < ranks.front().size(); ++i) {
    const std::string& name = ranks.front()[i].first;
    if (is_sparse_figure(name) && !used_anywhere(ranks, i)) continue;
    std::iota(order.begin(), order.end(), std::size_t{0});
    // By value, then by rank: ties name the lowest rank.
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return ranks[a][i].second < ranks[b][i].second; });
    const std::size_t lo = order.front(), mid = order[(order.size() - 1) / 2];
    const double top = ranks[order.back()][i].second;
    const std::size_t hi = *std::find_if(order.begin(), order.end(),
                                         [&](std::size_t r) { return ranks[r][i].second == top; });
    out[name] = {{"min", json_number(ranks[lo][i].second)},
                 {"min_rank", static_cast<int64_t>(lo)},
                 {"median", json_number(ranks[mid][i].second)},
                 {"max", json_number(ranks[hi][i].second)},
                 {"max_rank", static_cast<int64_t>(hi)}};
  }
  return out;
}

nlohmann::ordered_json rank_records(const std::vector<RankFigures>& ranks) {
  nlohmann::ordered_json every = nlohmann::ordered_json::array();
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    nlohmann::ordered_json one = {{"rank", static_cast<int64_t>(r)}};
    for (std::size_t i = 0; i < ranks[r].size(); ++i) {
      const auto& [name, value] = ranks[r][i];
      if (is_sparse_figure(name) && value == 0.0) continue;
      one[name] = json_number(value);
    }
    every.push_back(std::move(one));
  }
  return every;
}

}  // namespace plait
