#include "distributed/restart_agreement.hpp"

#include <thread>

#include <nlohmann/json.hpp>

#include "distributed/rendezvous.hpp"
#include "plait/sdk/error.hpp"

namespace plait {
namespace {

std::string key(int attempt, const std::string& what) { return concat("restart/", attempt, "/", what); }

int64_t wall_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

nlohmann::json report_json(const StopReport& r) {
  return {{"node", r.node},   {"interrupted", r.interrupted}, {"signal", r.signal},         {"cause", r.cause},
          {"rank", r.rank},   {"noticed_us", r.noticed_us},   {"fault", r.fault},           {"fault_us", r.fault_us}};
}

StopReport report_of(const nlohmann::json& j) {
  StopReport r;
  r.node = j.at("node").get<int>();
  r.interrupted = j.at("interrupted").get<bool>();
  r.signal = j.value("signal", 0);
  r.cause = j.at("cause").get<std::string>();
  r.rank = j.at("rank").get<int>();
  r.noticed_us = j.at("noticed_us").get<int64_t>();
  r.fault = j.at("fault").get<std::string>();
  r.fault_us = j.at("fault_us").get<int64_t>();
  return r;
}

}  // namespace

std::string attempt_job_id(const std::string& job_id, int attempt) {
  return attempt == 0 ? job_id : concat(job_id, "-a", attempt);
}

void report_stopped(JobStore& job, int attempt, const StopReport& r) {
  job.set(key(attempt, concat("stopped/", r.node)), report_json(r).dump());
}

std::optional<StopReport> StopReports::origin() const {
  std::optional<StopReport> best;
  for (const auto& r : reports) {
    const bool own = r.rank >= 0, best_own = best && best->rank >= 0;
    if (!best || (own && !best_own) || (own == best_own && r.noticed_us < best->noticed_us)) best = r;
  }
  return best;
}

StopReports await_stopped(JobStore& job, int attempt, int nnodes, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  StopReports reports;
  while (true) {
    reports = {};
    for (int node = 0; node < nnodes; ++node) {
      const auto said = job.try_get(key(attempt, concat("stopped/", node)));
      if (!said) {
        reports.missing.push_back(node);
        continue;
      }
      StopReport r = report_of(nlohmann::json::parse(*said));
      if (r.interrupted) reports.interrupted.push_back(node);
      reports.reports.push_back(std::move(r));
    }
    if (reports.missing.empty() || std::chrono::steady_clock::now() >= deadline) return reports;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void publish_decision(JobStore& job, int attempt, const RestartDecision& d) {
  job.set(key(attempt, "decision"), nlohmann::json{{"restart", d.restart},
                                                   {"why_not", d.why_not},
                                                   {"resume_from", d.resume_from},
                                                   {"resume_step", d.resume_step},
                                                   {"refused", d.refused},
                                                   {"origin", report_json(d.origin)},
                                                   {"stop_signal", d.stop_signal}}
                                        .dump());
}

std::optional<RestartDecision> await_decision(JobStore& job, int attempt, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (const auto text = job.try_get(key(attempt, "decision"))) {
      const nlohmann::json j = nlohmann::json::parse(*text);
      RestartDecision d;
      d.restart = j.at("restart").get<bool>();
      d.why_not = j.at("why_not").get<std::string>();
      d.resume_from = j.at("resume_from").get<std::string>();
      d.resume_step = j.at("resume_step").get<int64_t>();
      d.refused = j.at("refused").get<std::vector<std::string>>();
      d.origin = report_of(j.at("origin"));
      d.stop_signal = j.value("stop_signal", 0);
      return d;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void report_first_step(JobStore& attempt_store, int64_t step) {
  attempt_store.set("first-step", nlohmann::json{{"step", step}, {"at_us", wall_us()}}.dump());
}

std::optional<std::pair<int64_t, int64_t>> first_step(JobStore& attempt_store) {
  const auto text = attempt_store.try_get("first-step");
  if (!text) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(*text);
  return std::make_pair(j.at("step").get<int64_t>(), j.at("at_us").get<int64_t>());
}

}  // namespace plait
