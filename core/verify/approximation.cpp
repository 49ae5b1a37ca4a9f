#include "verify/approximation.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "plait/sdk/error.hpp"
#include "util/human_bytes.hpp"

namespace plait::verify {
namespace {

// "+1.4%"
std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f%%", fraction * 100);
  return text;
}

}  // namespace

double final_loss(const std::vector<nlohmann::json>& records) {
  const std::size_t n = std::max<std::size_t>(1, records.size() / 10);
  double sum = 0.0;
  for (std::size_t i = records.size() - n; i < records.size(); ++i) sum += records[i].at("loss").get<double>();
  return sum / static_cast<double>(n);
}

double bytes_per_step(const std::vector<nlohmann::json>& records) {
  double sum = 0.0;
  for (const auto& r : records) sum += r.value("comm_bytes", 0.0);
  return records.empty() ? 0.0 : sum / static_cast<double>(records.size());
}

GapVerdict loss_gap_verdict(const std::vector<nlohmann::json>& mine, const std::vector<nlohmann::json>& ddp, double allowed) {
  GapVerdict out;
  if (mine.empty() || ddp.empty()) {
    out.detail = concat("the runs recorded ", mine.size(), " and ", ddp.size(), " steps");
    return out;
  }
  const double loss = final_loss(mine), reference = final_loss(ddp), first = mine.front().at("loss").get<double>();
  const double gap = (loss - reference) / reference;
  const double sent = bytes_per_step(mine), sent_ddp = bytes_per_step(ddp);
  char share[32] = "-";
  if (sent_ddp > 0) std::snprintf(share, sizeof share, "%.3f", sent / sent_ddp);
  out.detail = concat("final loss ", loss, " against ddp's ", reference, " (", percent(gap), "; at most ", percent(allowed),
                      " passes); sends ", human_bytes(static_cast<int64_t>(sent)), " a step against ddp's ",
                      human_bytes(static_cast<int64_t>(sent_ddp)), " (", share, " of it)");
  if (!std::isfinite(loss) || !(loss < first)) {
    out.detail = concat("it did not learn: loss ", first, " at step 1, ", loss, " at the end; ", out.detail);
    return out;
  }
  out.passed = gap <= allowed;
  return out;
}

}  // namespace plait::verify
