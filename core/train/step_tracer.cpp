#include "train/step_tracer.hpp"

#include <chrono>
#include <filesystem>

#include "distributed/rendezvous.hpp"
#include "log/logging.hpp"
#include "output/run_folder.hpp"

namespace plait {
namespace fs = std::filesystem;

StepTracer::StepTracer(const RunPlan& plan) : plan_(plan) {
  steps_.insert(plan.config->debug().trace_steps.begin(), plan.config->debug().trace_steps.end());
  if (!steps_.empty()) recorder_ = std::make_unique<TraceRecorder>(plan.world->rank());
}

void StepTracer::before(int64_t step) {
  if (steps_.count(step) != 0) recorder_->start(step);
}

nlohmann::json StepTracer::distributed_info() const {
  const auto& groups = plan_.world->groups();
  nlohmann::json pgs = nlohmann::json::array();
  for (const auto& g : groups) {
    pgs.push_back({{"pg_name", g.name},
                   {"pg_desc", g.axis},
                   {"backend_config", concat(plan_.config->train().device, ":", g.backend)},
                   {"pg_size", g.ranks.size()},
                   {"ranks", g.ranks}});
  }
  return {{"backend", groups.empty() ? "none" : groups.front().backend},
          {"rank", plan_.world->rank()},
          {"world_size", plan_.world->size()},
          {"pg_count", groups.size()},
          {"pg_config", pgs}};
}

// Names for the rank's process and its tracks.
nlohmann::json StepTracer::rank_metadata() const {
  const int r = plan_.world->rank();
  const MeshCoords& at = plan_.world->mesh().coords();
  nlohmann::json m = nlohmann::json::array();
  m.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", r},
               {"args", {{"name", concat("rank ", r, " (pp ", at.pp, ", dp ", at.dp, ", tp ", at.tp, ")")}}}});
  m.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", r}, {"args", {{"sort_index", r}}}});
  for (const auto& [track, name] : {std::pair{TraceTrack::compute, "forward and backward (per microbatch, unit)"},
                                    std::pair{TraceTrack::phases, "phases and waits"},
                                    std::pair{TraceTrack::transfers, "sends and receives"}}) {
    m.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", r}, {"tid", static_cast<int>(track)},
                 {"args", {{"name", name}}}});
  }
  return m;
}

void StepTracer::after(int64_t step) {
  if (steps_.count(step) == 0) return;
  nlohmann::json mine = {{"distributedInfo", distributed_info()}, {"metadata", rank_metadata()},
                         {"events", recorder_->stop()}};
  JobStore* store = plan_.world->store();
  std::vector<nlohmann::json> ranks;
  if (store == nullptr) {
    ranks.push_back(std::move(mine));
  } else {
    store->set(concat("trace/", step, "/", plan_.world->rank()), mine.dump());
    if (plan_.world->rank() != 0) return;
    const auto timeout = std::chrono::milliseconds(
        static_cast<int64_t>(plan_.config->distributed().rendezvous_timeout_s * 1000.0));
    for (int r = 0; r < plan_.world->size(); ++r) {
      ranks.push_back(nlohmann::json::parse(
          store->wait_get(concat("trace/", step, "/", r), timeout, concat("rank ", r, "'s trace of step ", step))));
    }
  }
  write(ranks);
  core_log().info("trace of step ", step, " (every rank) in ", (fs::path(plan_.out_dir) / "trace.json").string());
}

void StepTracer::write(const std::vector<nlohmann::json>& ranks) {
  if (kept_.empty()) kept_.resize(ranks.size());
  const fs::path folder = fs::path(plan_.out_dir) / "trace";
  fs::create_directories(folder);
  nlohmann::json merged = nlohmann::json::array();
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    if (kept_[r].is_null()) kept_[r] = {{"distributedInfo", ranks[r].at("distributedInfo")}, {"events", ranks[r].at("metadata")}};
    for (const auto& e : ranks[r].at("events")) kept_[r]["events"].push_back(e);
    // distributedInfo first and "key": value with a space: Holistic Trace Analysis finds a
    // file's rank by matching `"rank": N` in its first lines.
    nlohmann::ordered_json one;
    one["distributedInfo"] = kept_[r].at("distributedInfo");
    one["displayTimeUnit"] = "ms";
    one["traceEvents"] = kept_[r].at("events");
    write_file_atomically((folder / concat("rank-", r, ".json")).string(), one.dump(1));
    for (const auto& e : kept_[r].at("events")) merged.push_back(e);
  }
  write_file_atomically((fs::path(plan_.out_dir) / "trace.json").string(),
                        nlohmann::json{{"traceEvents", merged},
                                       {"displayTimeUnit", "ms"},
                                       {"distributedInfo", kept_.front().at("distributedInfo")}}.dump());
}

}  // namespace plait
