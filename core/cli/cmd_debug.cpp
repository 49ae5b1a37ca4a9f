#include <filesystem>
#include <iostream>

#include "cli/commands.hpp"
#include "debug/flight_report.hpp"  // rank_list
#include "debug/flight_summary.hpp"
#include "plait/sdk/error.hpp"

namespace plait::cli {
namespace fs = std::filesystem;

int debug_run(const DebugArgs& args) {
  std::error_code ec;
  PLAIT_CHECK(fs::is_directory(args.run, ec), concat("plait debug: ", args.run, " is not a folder"),
              "give the run folder of a job (the one with rank-<r>.log and status.json)");
  const std::vector<LiveRank> live = live_ranks(args.run);
  if (!live.empty()) {
    std::vector<int> ranks;
    for (const auto& r : live) ranks.push_back(r.rank);
    std::cout << "asking ranks " << rank_list(ranks) << " (still running) for their flight records\n";
    const std::vector<int> silent =
        request_flight_records(args.run, live, std::chrono::milliseconds(static_cast<int64_t>(args.wait_s * 1000)));
    if (!silent.empty()) {
      std::cout << "ranks " << rank_list(silent) << " did not answer within " << args.wait_s
                << " s (stopped, or stuck where plait cannot answer); their older records, if any, are used\n";
    }
  }
  // The job's size: the ranks this node started (summarise_flight adds the records' own).
  int world = 0;
  for (const auto& r : live) world = std::max(world, r.rank + 1);
  const std::string paragraph = summarise_flight(args.run, world, /*live=*/!live.empty());
  PLAIT_CHECK(!paragraph.empty(), concat("plait debug: ", args.run, " has no flight records (flight/rank-<r>.json)"),
              "a rank writes one when it fails, is stopped, or gets SIGUSR1; a one-process run has none");
  std::cout << paragraph << "\n";
  return 0;
}

}  // namespace plait::cli
