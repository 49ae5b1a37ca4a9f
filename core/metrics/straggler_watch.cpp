#include "metrics/straggler_watch.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "plait/sdk/error.hpp"

namespace plait {
namespace {

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

std::string ms(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.0f ms", v);
  return buf;
}

}  // namespace

std::optional<Straggler> StragglerWatch::add(const std::vector<double>& own_ms) {
  if (own_ms.size() < 2) return std::nullopt;
  if (!recent_.empty() && recent_.front().size() != own_ms.size()) recent_.clear();
  recent_.push_back(own_ms);
  if (static_cast<int>(recent_.size()) > window_) recent_.pop_front();
  if (recent_.size() < 3) return std::nullopt;
  std::vector<double> per_rank(own_ms.size());
  for (std::size_t r = 0; r < own_ms.size(); ++r) {
    std::vector<double> times;
    for (const auto& step : recent_) times.push_back(step[r]);
    per_rank[r] = median(times);
  }
  const double typical = median(per_rank);
  const auto worst = std::max_element(per_rank.begin(), per_rank.end());
  if (*worst <= typical * ratio_ || *worst - typical < min_gap_ms_) return std::nullopt;
  return Straggler{static_cast<int>(worst - per_rank.begin()), *worst, typical, static_cast<int>(recent_.size())};
}

std::string StragglerWatch::change(const std::optional<Straggler>& now, int64_t step) {
  const std::optional<int> rank = now ? std::optional<int>(now->rank) : std::nullopt;
  if (rank == reported_) return "";
  const std::optional<int> before = std::exchange(reported_, rank);
  if (!now) return concat("step ", step, ": rank ", *before, " no longer lags the others");
  return concat("step ", step, ": rank ", now->rank, " is a straggler: ", ms(now->own_ms),
                " of its own work per step against the median rank's ", ms(now->median_ms), " over the last ", now->steps,
                " recorded steps (", std::round(now->own_ms / now->median_ms * 10.0) / 10.0,
                "x); the other ranks wait for it in their collectives");
}

}  // namespace plait
