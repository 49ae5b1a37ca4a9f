#pragma once
// One rank of a config's job, measured instead of modelled: built as `plait run` builds
// it and stepped once, alone, at the config's world size, with every tensor a shape on
// the meta device and communicators that complete at once (distributed/instant_backend).
// What the core accounts for is then exact at any size: the data plugin's state as its
// state_bytes() reports it, and the step's collectives and sends per axis and operation
// as the counted communicators record them (a real run's metrics `comm`) — for every
// plugin, in-house ones included, with no cost model needed. (`plait plan --explain
// --measure`; its memory takes nothing: a shape holds no bytes, but an offload plugin's
// host state is real host memory.)
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "distributed/comm_stats.hpp"
#include "plait/sdk/data_parallel.hpp"
#include "plan/step_time.hpp"
#include "run/prepare.hpp"

namespace plait {

struct MetaRankFigures {
  int rank = 0;
  int64_t pp_rank = 0;
  StateBytes state;
  std::map<std::string, OpCounters> comm;  // the first step's, by "<axis>.<op>" (times are zero)
};

// `rank` of `run`'s world (its mesh and every plugin as prepared).
MetaRankFigures measure_rank_on_meta(const PreparedRun& run, int rank);
// Each pipeline rank's first rank (data and tensor rank 0), in pipeline order: the ranks
// whose state differs (a stage's data and tensor ranks hold alike).
std::vector<MetaRankFigures> measure_pipeline_ranks_on_meta(const PreparedRun& run);

// Calls and payload bytes of one kind of operation on one axis ("dp.all_gather").
struct OpTotals {
  int64_t calls = 0, payload_bytes = 0;
  bool operator==(const OpTotals&) const = default;
};
inline std::ostream& operator<<(std::ostream& out, const OpTotals& t) {
  return out << t.calls << " calls, " << t.payload_bytes << " bytes";
}
// The data plugin's collectives its cost model predicts (the busiest pipeline rank's:
// ConfigPrediction::data_ops), totalled by kind on the data-parallel axis, as a measured
// rank's `comm` counts them.
std::map<std::string, OpTotals> predicted_data_traffic(const std::vector<CommOp>& data_ops);
// The measured operations on the data-parallel axis, likewise.
std::map<std::string, OpTotals> measured_data_traffic(const MetaRankFigures& measured);

}  // namespace plait
