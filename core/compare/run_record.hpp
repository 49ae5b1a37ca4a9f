#pragma once
// What `plait compare` reads of a run folder: its resolved config with where each value
// came from (config.lock.toml, whose values carry their origin as a trailing comment),
// the bundles it read with their checksums, its metrics records and its status.
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace plait::compare {

struct Setting {
  std::string value;   // as TOML writes it
  std::string origin;  // "configs/run.toml:3:1", "--set train.lr=1e-3", "default", or "" when the lock has none
};

struct BundleRead {
  std::string path;
  std::string xxh3;
};

struct RunRecord {
  std::string dir;
  std::string name;                        // the folder's name, made unique among the runs compared
  std::map<std::string, Setting> settings; // "table.key" -> setting, [lock] left out
  std::vector<BundleRead> bundles;
  std::vector<nlohmann::json> metrics;     // one per recorded step
  // Further runs of the same config (a sweep's repeats "<name>.r2", ...): their records
  // add to the speed and time figures, and their losses must equal the first's.
  std::vector<std::vector<nlohmann::json>> repeats;
  std::string state;                       // status.json's state ("finished", "failed", ...), or ""
  std::string reason;                      // why it failed
  int64_t world_size = 1;
  double flops_per_token = 0.0;
  bool torn_last_line = false;  // metrics.jsonl ended in a line cut short, which was left out
};

// Reads a run folder; fails naming the folder and the file that is missing or malformed.
RunRecord load_run(const std::string& dir);

// The run folders named: each folder that holds a config.lock.toml, or else each
// folder inside it that does (a sweep folder: in the order of its sweep.json's
// combinations, else by name).
std::vector<std::string> expand_run_folders(const std::vector<std::string>& paths);

// The sweep combination a run folder holds: its name less a repeat's ".rN".
std::string combination_of(const std::string& folder);

// Loads them in order; folders "<name>.r1", "<name>.r2", ... of one parent (a sweep's
// repeats) become one run named <name>, the others' records as its repeats.
std::vector<RunRecord> load_runs(const std::vector<std::string>& dirs);

}  // namespace plait::compare
