// plait plan --explain --measure: each pipeline rank's first rank built and stepped on the
// meta device (plan/meta_rank.hpp), its state beside the cost model's prediction and its
// step's traffic by axis and operation.
#include <cstdio>
#include <map>

#include "cli/plan_report.hpp"
#include "util/human_bytes.hpp"

namespace plait::cli {
namespace {

struct StateRow {
  const char* what;
  int64_t predicted, measured;
};

std::vector<StateRow> state_rows(const StateBytes& predicted, const StateBytes& measured) {
  return {{"parameters", predicted.params, measured.params},
          {"gradients", predicted.grads, measured.grads},
          {"optimizer state", predicted.optimizer, measured.optimizer},
          {"host parameters", predicted.host_params, measured.host_params},
          {"host gradients", predicted.host_grads, measured.host_grads},
          {"host optimizer state", predicted.host_optimizer, measured.host_optimizer}};
}

const RankMemory& predicted_of(const ConfigPrediction& p, const MetaRankFigures& m) {
  return p.ranks.at(static_cast<std::size_t>(m.pp_rank));
}

// The prediction keeps the busiest pipeline rank's collectives only.
bool has_predicted_traffic(const ConfigPrediction& p, const MetaRankFigures& m) {
  return p.ranks.at(p.busiest).pp_rank == m.pp_rank;
}

// Every kind either side has, predicted beside measured.
std::map<std::string, std::pair<OpTotals, OpTotals>> data_traffic_rows(const ConfigPrediction& p,
                                                                     const MetaRankFigures& m) {
  std::map<std::string, std::pair<OpTotals, OpTotals>> rows;
  for (const auto& [kind, t] : predicted_data_traffic(p.data_ops)) rows[kind].first = t;
  for (const auto& [kind, t] : measured_data_traffic(m)) rows[kind].second = t;
  return rows;
}

nlohmann::ordered_json totals_json(const OpTotals& t) { return {{"calls", t.calls}, {"payload_bytes", t.payload_bytes}}; }

}  // namespace

nlohmann::ordered_json meta_json(const ConfigPrediction& p, const std::vector<MetaRankFigures>& measured) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const MetaRankFigures& m : measured) {
    nlohmann::ordered_json state = nlohmann::ordered_json::object();
    for (const StateRow& r : state_rows(predicted_of(p, m).state, m.state)) {
      state[r.what] = {{"predicted", r.predicted}, {"measured", r.measured}};
    }
    nlohmann::ordered_json comm = nlohmann::ordered_json::object();
    for (const auto& [key, c] : m.comm) {
      comm[key] = {{"calls", c.calls}, {"bytes", c.bus_bytes}, {"payload_bytes", c.payload_bytes}};
    }
    nlohmann::ordered_json entry = {{"rank", m.rank}, {"pp_rank", m.pp_rank}, {"state", state}, {"comm", comm}};
    if (has_predicted_traffic(p, m)) {
      nlohmann::ordered_json traffic = nlohmann::ordered_json::object();
      for (const auto& [kind, row] : data_traffic_rows(p, m)) {
        traffic[kind] = {{"predicted", totals_json(row.first)}, {"measured", totals_json(row.second)}};
      }
      entry["data_traffic"] = traffic;
    }
    out.push_back(entry);
  }
  return out;
}

void print_meta(const ConfigPrediction& p, const std::vector<MetaRankFigures>& measured) {
  for (const MetaRankFigures& m : measured) {
    std::printf("\nrank %d (pipeline rank %lld) built and stepped once on the meta device:\n%-28s %12s %12s\n", m.rank,
                static_cast<long long>(m.pp_rank), "state", "predicted", "measured");
    for (const StateRow& r : state_rows(predicted_of(p, m).state, m.state)) {
      if (r.predicted == 0 && r.measured == 0) continue;
      std::printf("%-28s %12s %12s%s\n", r.what, human_bytes(r.predicted).c_str(), human_bytes(r.measured).c_str(),
                  r.predicted == r.measured ? "" : "  (differs)");
    }
    if (has_predicted_traffic(p, m)) {
      std::printf("%-28s %21s %21s\n", "the data plugin's, by kind", "predicted calls, bytes", "measured calls, bytes");
      for (const auto& [kind, row] : data_traffic_rows(p, m)) {
        std::printf("%-28s %8lld %12s %8lld %12s%s\n", kind.c_str(), static_cast<long long>(row.first.calls),
                    human_bytes(row.first.payload_bytes).c_str(), static_cast<long long>(row.second.calls),
                    human_bytes(row.second.payload_bytes).c_str(), row.first == row.second ? "" : "  (differs)");
      }
    }
    std::printf("%-28s %12s %12s %12s\n", "its step's traffic", "calls", "payload", "bus bytes");
    for (const auto& [key, c] : m.comm) {
      std::printf("%-28s %12lld %12s %12s\n", key.c_str(), static_cast<long long>(c.calls),
                  human_bytes(c.payload_bytes).c_str(), human_bytes(static_cast<int64_t>(c.bus_bytes)).c_str());
    }
  }
}

}  // namespace plait::cli
