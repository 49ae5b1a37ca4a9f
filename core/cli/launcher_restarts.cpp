#include "cli/launcher_restarts.hpp"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint_files.hpp"
#include "checkpoint/checkpoint_location.hpp"
#include "distributed/rendezvous.hpp"
#include "log/logging.hpp"
#include "run/restart_point.hpp"
#include "output/run_folder.hpp"

namespace plait::cli {
namespace fs = std::filesystem;
namespace {

int64_t wall_us(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

std::string node_list(const std::vector<int>& nodes) {
  std::string out;
  for (int n : nodes) out += (out.empty() ? "" : ", ") + std::to_string(n);
  return out;
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

int64_t job_steps_ended(const std::string& folder) {
  int64_t step = steps_ended(read_flight_records(folder));
  if (auto status = read_run_status(folder)) step = std::max(step, status->step);
  std::ifstream in(fs::path(folder) / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    try {
      step = std::max(step, nlohmann::json::parse(line).value("step", int64_t{0}));
    } catch (const std::exception&) {
      // a torn last line
    }
  }
  return step;
}

namespace {

// A slow fault strikes in every step from its own on: it is not what ended an attempt.
bool ends_attempts(const FaultStrike& strike) { return strike.fault.rfind("slow", 0) != 0; }

// What this launcher saw: its failure, and the fault injected on this node in that attempt.
StopReport own_report(const LaunchPlan& launch, int attempt, const JobStopped& stopped) {
  StopReport r;
  r.node = launch.node_rank;
  r.interrupted = stopped.interrupted;
  r.signal = stopped.signal;
  r.cause = first_line(stopped.what());
  r.rank = stopped.rank;
  r.noticed_us = wall_us(stopped.noticed);
  for (const auto& strike : read_fault_strikes(launch.folder)) {
    if (strike.attempt == attempt && ends_attempts(strike) && strike.at_us <= r.noticed_us && strike.at_us > r.fault_us) {
      r.fault_us = strike.at_us;
      r.fault = strike.fault;
    }
  }
  return r;
}

RestartDecision decide(const PreparedRun& prep, const LaunchPlan& launch, int attempt, const StopReports& reports) {
  const int64_t max_restarts = prep.config->distributed().max_restarts;
  if (!reports.interrupted.empty()) {
    RestartDecision d = RestartDecision::none(concat("the launcher of node ", node_list(reports.interrupted), " was told to stop"));
    for (const auto& r : reports.reports) d.stop_signal = d.stop_signal != 0 ? d.stop_signal : r.signal;
    return d;
  }
  if (!reports.missing.empty()) {
    return RestartDecision::none(concat("the launcher of node ", node_list(reports.missing), " did not report within ",
                                        prep.dist.rendezvous_timeout.count() / 1000.0,
                                        " s that its ranks had stopped: that node is lost"));
  }
  if (attempt >= max_restarts) {
    return RestartDecision::none(
        concat("the job restarted ", attempt, " time(s) already ([distributed] max_restarts = ", max_restarts, ")"));
  }
  const auto root = checkpoint::checkpoint_root(prep.config->table("checkpoint"), launch.folder);
  // Every node's ranks have stopped: what their saves left unfinished goes before a checkpoint is chosen.
  for (const auto& line : checkpoint::tidy_unfinished_saves(root)) core_log().warn(line);
  const RestartPoint point = choose_restart_point(root);
  for (const auto& why : point.refused) core_log().warn("a restart cannot resume from checkpoint ", why);
  RestartDecision d;
  d.restart = true;
  d.resume_from = point.checkpoint.string();
  d.resume_step = point.step;
  d.refused = point.refused;
  return d;
}

RestartDecision agree(JobStore& job, const PreparedRun& prep, const LaunchPlan& launch, int attempt,
                      const JobStopped& stopped) {
  const StopReport own = own_report(launch, attempt, stopped);
  report_stopped(job, attempt, own);
  if (launch.node_rank != 0) {
    if (auto d = await_decision(job, attempt, prep.dist.rendezvous_timeout)) return *d;
    return RestartDecision::none(
        concat("node 0's launcher decided nothing within ", prep.dist.rendezvous_timeout.count() / 1000.0, " s"));
  }
  const StopReports reports = await_stopped(job, attempt, launch.nnodes, prep.dist.rendezvous_timeout);
  RestartDecision d = decide(prep, launch, attempt, reports);
  d.origin = reports.origin().value_or(own);
  publish_decision(job, attempt, d);
  return d;
}

}  // namespace

RestartDecision agree_on_restart(JobStore& job, const PreparedRun& prep, const LaunchPlan& launch, int attempt,
                                 const JobStopped& stopped) {
  if (prep.config->distributed().max_restarts == 0) {
    RestartDecision d = RestartDecision::none("");
    d.stop_signal = stopped.signal;
    return d;
  }
  try {
    return agree(job, prep, launch, attempt, stopped);
  } catch (const std::exception& e) {
    // The store went with node 0's launcher (its node lost, or itself killed): no one can agree.
    return RestartDecision::none(concat("the launchers could not agree through the job's store: ", first_line(e.what())));
  }
}

RestartBook::RestartBook(std::string run_folder, int node_rank, RunStatus& status)
    : folder_(std::move(run_folder)), node_rank_(node_rank), status_(status) {}

void RestartBook::restarting(const RestartDecision& decision, const std::optional<FlightCulprit>& culprit) {
  ++restarts_;
  const StopReport& origin = decision.origin;
  std::string cause = origin.cause;
  while (!cause.empty() && cause.back() == '.') cause.pop_back();
  const std::string from =
      decision.resume_from.empty() ? "from the start (no checkpoint was saved)" : concat("from ", decision.resume_from);
  core_log().warn("restart ", restarts_, " after: ", cause, "; resuming ", from);
  if (node_rank_ != 0) return;
  RestartRecord r;
  r.restart = restarts_;
  r.cause = cause;
  r.reported_by_rank = origin.rank;
  r.rank = culprit ? culprit->rank : origin.rank;
  if (culprit) {
    r.culprit_operation = culprit->operation;
    r.culprit_step = culprit->step;
  }
  r.node = origin.node;
  r.at = utc_now();
  r.fault = origin.fault;
  r.step_reached = job_steps_ended(folder_);
  r.resumed_from_step = decision.resume_step;
  r.checkpoint = decision.resume_from;
  r.refused_checkpoints = decision.refused;
  notice_us_ = origin.noticed_us;
  fault_us_ = origin.fault_us;
  if (fault_us_ > 0) r.fault_to_notice_s = (notice_us_ - fault_us_) / 1e6;
  records_.push_back(r);
  reuse_run_folder(folder_, decision.resume_step);  // the steps after it are trained again
  write_restart_records(folder_, records_);
  status_.restarting(restarts_, r.cause);
}

void RestartBook::started() {
  if (node_rank_ != 0 || records_.empty()) return;
  started_us_ = wall_us(std::chrono::system_clock::now());
  records_.back().notice_to_restart_s = (started_us_ - notice_us_) / 1e6;
  write_restart_records(folder_, records_);
  awaiting_first_step_ = true;
}

void RestartBook::poll_first_step(JobStore& attempt_store) {
  if (!awaiting_first_step_) return;
  try {
    const auto first = first_step(attempt_store);
    if (!first) return;
    awaiting_first_step_ = false;
    RestartRecord& r = records_.back();
    r.restart_to_first_step_s = (first->second - started_us_) / 1e6;
    if (fault_us_ > 0) r.fault_to_first_step_s = (first->second - fault_us_) / 1e6;
    write_restart_records(folder_, records_);
    core_log().info("restart ", r.restart, ": step ", first->first, " done ", *r.restart_to_first_step_s,
                    " s after the restart", fault_us_ > 0 ? concat(", ", *r.fault_to_first_step_s, " s after the fault") : "");
  } catch (const std::exception& e) {
    awaiting_first_step_ = false;  // the record keeps what it has; the run goes on
    core_log().warn("could not time restart ", restarts_, "'s first step: ", e.what());
  }
}

void RestartBook::keep_flight_records(int attempt) const {
  const fs::path flight = fs::path(folder_) / "flight";
  const fs::path kept = flight / concat("attempt-", attempt);
  std::error_code ec;
  fs::create_directories(kept, ec);
  std::vector<fs::path> moving;  // listed first: a folder is not renamed from while it is read
  for (const auto& entry : fs::directory_iterator(flight, ec)) {
    const std::string name = entry.path().filename().string();
    if ((name.rfind("rank-", 0) == 0 && entry.path().extension() == ".json") || name == "report.txt") {
      moving.push_back(entry.path());
    }
  }
  for (const auto& path : moving) fs::rename(path, kept / path.filename(), ec);
}

}  // namespace plait::cli
