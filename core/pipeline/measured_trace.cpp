#include "pipeline/measured_trace.hpp"

#include "distributed/rendezvous.hpp"
#include "pipeline/chrome_trace.hpp"
#include "plait/sdk/error.hpp"

namespace plait {

void write_measured_trace(World& world, const std::vector<RanAction>& timeline, const ScheduleSpec& spec, int64_t step,
                          std::chrono::milliseconds timeout, const std::string& path) {
  const int rank = world.rank();
  const MeshCoords& at = world.mesh().coords();
  nlohmann::json events = nlohmann::json::array();
  events.push_back(thread_name_event(0, rank, concat("rank ", rank, " (pp ", at.pp, ", dp ", at.dp, ", tp ", at.tp, ")")));
  for (const auto& t : timeline) events.push_back(trace_event(t.action, spec, 0, rank, t.start_us, t.end_us));
  JobStore* store = world.store();
  if (store == nullptr) return write_chrome_trace(events, path);
  store->set(concat("pipeline-trace/", step, "/", rank), events.dump());
  if (rank != 0) return;
  nlohmann::json all = nlohmann::json::array();
  for (int r = 0; r < world.size(); ++r) {
    const std::string key = concat("pipeline-trace/", step, "/", r);
    for (auto& e : nlohmann::json::parse(store->wait_get(key, timeout, concat("rank ", r, "'s pipeline trace")))) {
      all.push_back(std::move(e));
    }
  }
  write_chrome_trace(all, path);
}

}  // namespace plait
