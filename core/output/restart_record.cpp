#include "output/restart_record.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "output/run_folder.hpp"

namespace plait {
namespace fs = std::filesystem;
namespace {

nlohmann::ordered_json seconds(const std::optional<double>& s) {
  return s ? nlohmann::ordered_json(std::round(*s * 1000.0) / 1000.0) : nlohmann::ordered_json();
}

nlohmann::ordered_json optional_rank(int rank) {
  return rank >= 0 ? nlohmann::ordered_json(rank) : nlohmann::ordered_json();
}

int rank_of(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j.at(key).is_number() ? j.at(key).get<int>() : -1;
}

std::optional<double> seconds_of(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j.at(key).is_number()) return std::nullopt;
  return j.at(key).get<double>();
}

}  // namespace

void write_restart_records(const std::string& run_folder, const std::vector<RestartRecord>& records) {
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (const auto& r : records) {
    all.push_back({{"restart", r.restart},
                   {"cause", r.cause},
                   {"rank", optional_rank(r.rank)},
                   {"culprit", r.rank < 0 ? nlohmann::ordered_json()
                                          : nlohmann::ordered_json{{"rank", r.rank},
                                                                   {"operation", r.culprit_operation.empty()
                                                                                     ? nlohmann::ordered_json()
                                                                                     : nlohmann::ordered_json(r.culprit_operation)},
                                                                   {"step", r.culprit_step}}},
                   {"reported_by_rank", optional_rank(r.reported_by_rank)},
                   {"node", r.node},
                   {"at", r.at},
                   {"fault", r.fault.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(r.fault)},
                   {"step_reached", r.step_reached},
                   {"resumed_from_step", r.resumed_from_step},
                   {"steps_lost", r.step_reached - r.resumed_from_step},
                   {"checkpoint", r.checkpoint.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(r.checkpoint)},
                   {"refused_checkpoints", r.refused_checkpoints},
                   {"fault_to_notice_s", seconds(r.fault_to_notice_s)},
                   {"notice_to_restart_s", seconds(r.notice_to_restart_s)},
                   {"restart_to_first_step_s", seconds(r.restart_to_first_step_s)},
                   {"fault_to_first_step_s", seconds(r.fault_to_first_step_s)}});
  }
  write_file_atomically((fs::path(run_folder) / "restarts.json").string(), all.dump(2) + "\n");
}

std::vector<RestartRecord> read_restart_records(const std::string& run_folder) {
  std::ifstream in(fs::path(run_folder) / "restarts.json");
  std::vector<RestartRecord> out;
  if (!in) return out;
  try {
    for (const auto& j : nlohmann::json::parse(in)) {
      RestartRecord r;
      r.restart = j.value("restart", 0);
      r.cause = j.value("cause", "");
      r.rank = rank_of(j, "rank");
      r.reported_by_rank = rank_of(j, "reported_by_rank");
      if (j.contains("culprit") && j.at("culprit").is_object()) {
        const auto& c = j.at("culprit");
        if (c.contains("operation") && c.at("operation").is_string()) r.culprit_operation = c.at("operation").get<std::string>();
        r.culprit_step = c.value("step", int64_t{0});
      }
      r.node = j.value("node", 0);
      r.at = j.value("at", "");
      r.fault = j.at("fault").is_string() ? j.at("fault").get<std::string>() : "";
      r.step_reached = j.value("step_reached", int64_t{0});
      r.resumed_from_step = j.value("resumed_from_step", int64_t{0});
      r.checkpoint = j.at("checkpoint").is_string() ? j.at("checkpoint").get<std::string>() : "";
      r.refused_checkpoints = j.value("refused_checkpoints", std::vector<std::string>{});
      r.fault_to_notice_s = seconds_of(j, "fault_to_notice_s");
      r.notice_to_restart_s = seconds_of(j, "notice_to_restart_s");
      r.restart_to_first_step_s = seconds_of(j, "restart_to_first_step_s");
      r.fault_to_first_step_s = seconds_of(j, "fault_to_first_step_s");
      out.push_back(std::move(r));
    }
  } catch (const std::exception&) {
    return {};  // a damaged record is no record; the run's logs still say what happened
  }
  return out;
}

std::vector<FaultStrike> read_fault_strikes(const std::string& run_folder) {
  std::ifstream in(fs::path(run_folder) / "faults.jsonl");
  std::vector<FaultStrike> out;
  for (std::string line; std::getline(in, line);) {
    try {
      const nlohmann::json j = nlohmann::json::parse(line);
      out.push_back({j.at("fault").get<std::string>(), j.at("where").get<std::string>(), j.at("rank").get<int>(),
                     j.at("attempt").get<int>(), j.at("at_us").get<int64_t>()});
    } catch (const std::exception&) {
      // a line torn by a rank killed while writing it: the others still count
    }
  }
  return out;
}

}  // namespace plait
