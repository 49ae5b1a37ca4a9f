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
#include <string>

#include "distributed/comm_stats.hpp"
#include "plait/sdk/data_parallel.hpp"
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

}  // namespace plait
