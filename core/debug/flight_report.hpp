#pragma once
// Reads the ranks' flight records of a run (flight/rank-<r>.json) and names, in one
// paragraph, what went wrong between them: the rank that never entered an operation the
// others waited in (following a rank that waits on another to the one that holds them
// all up), ranks that disagree on an operation's type, size or dtype at the same number
// (a desync), and a rank that entered the last collectives last (a straggler). The
// launcher prints it when a job fails; `plait debug RUN` prints it for any run.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace plait {

struct FlightRecordOp {
  uint64_t seq = 0;
  std::string group, op, dtype, plugin, phase, unit, state;
  int64_t bytes = 0, microbatch = -1, step = 0;
  int peer = -1;
  int64_t issued_us = 0, started_us = 0, ended_us = 0;
  bool done() const { return state == "completed"; }
};

struct FlightGroupCount {
  std::vector<int> ranks;
  uint64_t collectives = 0;
  std::map<int, uint64_t> sends, recvs;  // peer -> sends to it, receives from it, issued
};

struct RankFlightRecord {
  int rank = 0;
  std::string reason;
  int64_t written_us = 0, step = 0;
  std::map<std::string, FlightGroupCount> groups;
  std::vector<FlightRecordOp> ops;  // oldest first
};

struct FlightRecords {
  std::map<int, RankFlightRecord> ranks;
  std::vector<std::string> unreadable;  // "rank-3.json: <why>"
};

// Every rank-<r>.json in <run folder>/flight (none: an empty set).
FlightRecords read_flight_records(const std::string& run_folder);
// The same of one folder of records (flight/, or an earlier start's flight/attempt-<n>/).
FlightRecords read_flight_folder(const std::string& flight_folder);

// The rank the findings blame: the one that held the others up (the hang's first
// culprit), else a rank that crashed; with the operation the others waited in for it, or
// the one it was in, and the step.
struct FlightCulprit {
  int rank = -1;
  std::string operation;  // "all_reduce #12 on group dp.0 (ddp grad-reduce, step 7)"; empty: in none
  int64_t step = 0;
};

struct FlightFindings {
  std::vector<std::string> hang, desync, straggler;  // sentences, the most telling first
  std::vector<int> silent;  // ranks of the job that wrote no record
  std::optional<FlightCulprit> culprit;
  bool empty() const { return hang.empty() && desync.empty() && straggler.empty(); }
};

// The last step every rank with a record had ended: a rank records the step it is in, so
// one before the least of those (0: no records). What a failed job reached when the rank
// that keeps its status could not say.
int64_t steps_ended(const FlightRecords& records);

// `world_size`: the job's ranks (a rank with no record is named as such). `live`: the job
// is still running (plait debug), so a short wait is "in flight", not a hang.
FlightFindings analyse_flight(const FlightRecords& records, int world_size, bool live = false);

// The findings as one paragraph ("" when there are no records at all).
std::string flight_paragraph(const FlightRecords& records, const FlightFindings& findings, int world_size);

// "0–2", "0, 2, 5": ranks as a message names them.
std::string rank_list(std::vector<int> ranks);

}  // namespace plait
