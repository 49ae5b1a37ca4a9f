#pragma once
// What `plait sweep` runs: the product of its --vary flags (KEY=V1,V2,...), each
// combination as --set flags and a folder name, repeated R times with the repeats
// interleaved (every combination once, then again), so that a machine's slow minute
// falls on several combinations instead of one.
#include <functional>
#include <string>
#include <vector>

#include "config/schema.hpp"

namespace plait::sweep {

struct Variation {
  std::string key;                  // "parallel.data"
  std::vector<std::string> values;  // "ddp", "zero", "fsdp"
};

// `--vary KEY=V1,V2`: commas inside brackets or quotes do not split ("[1,2],[3,4]").
// Fails naming the flag when the key is not table.key or a value is empty.
Variation parse_vary(const std::string& flag);

// A table's schema (the core's or a found plugin's), or null when no table has that name.
using SchemaOf = std::function<const TableSchema*(const std::string& table)>;

// Refuses, naming the --vary flag and the value, a key no table has, a value its key's
// schema refuses (a word for a number, a number past its bounds, a choice it lacks) and a
// value given twice (also as 1e-3 and 0.001): each would make runs that are skipped or
// that repeat each other, found only after the sweep had started.
void check_variation(const Variation& variation, const SchemaOf& schema_of);

struct Combination {
  std::vector<std::string> sets;  // "parallel.data=zero", ...
  std::string name;               // "data-zero_stage-3": folder-safe, unique in the sweep
};

// Every combination, the first variation's values changing slowest. Fails when a key is
// varied twice.
std::vector<Combination> combinations(const std::vector<Variation>& variations);

struct PlannedRun {
  std::size_t combination = 0;
  int repeat = 0;      // from 1
  std::string folder;  // name inside the sweep folder: "<combination>" or "<combination>.r<repeat>"
};

// Repeats interleaved: every combination of repeat 1, then of repeat 2, ..., each repeat
// starting a share of the list further on (for 9 combinations and 3 repeats: 0..8, then
// 3..8 0..2, then 6..8 0..5).
std::vector<PlannedRun> run_order(const std::vector<Combination>& kept, int repeats);

}  // namespace plait::sweep
