#include "debug/flight_report.hpp"

#include <string_view>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <regex>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "plait/sdk/error.hpp"
#include "util/abbreviate.hpp"
#include "util/human_bytes.hpp"
#include "util/json_problem.hpp"

namespace plait {
namespace fs = std::filesystem;
namespace {

// A record's shape, checked before it is read: a damaged one is named as such, not met
// later as a missing group or a rank that overflowed.
void check_record_shape(const nlohmann::json& j, int file_rank) {
  PLAIT_CHECK(j.is_object(), concat("it holds ", j.type_name(), ", not a record"), "");
  PLAIT_CHECK(j.contains("rank") && j.at("rank").is_number_integer() && j.at("rank").get<int64_t>() == file_rank,
              concat("its rank is ", j.contains("rank") ? abbreviate(j.at("rank").dump(), 24) : std::string("missing"),
                     ", not the ", file_rank, " its name says"),
              "");
  PLAIT_CHECK(j.contains("groups") && j.at("groups").is_object(), "its \"groups\" is not an object of groups", "");
  PLAIT_CHECK(j.contains("ops") && j.at("ops").is_array(), "its \"ops\" is not a list of operations", "");
  for (const auto& o : j.at("ops")) {
    PLAIT_CHECK(o.is_object() && o.contains("group") && o.at("group").is_string() &&
                    j.at("groups").contains(o.at("group").get<std::string>()),
                concat("an operation names a group its \"groups\" lack (", abbreviate(o.dump(), 60), ")"), "");
  }
}

RankFlightRecord parse_record(const nlohmann::json& j) {
  RankFlightRecord r;
  r.rank = j.at("rank").get<int>();
  r.reason = j.value("reason", "");
  r.written_us = j.value("written_us", int64_t{0});
  r.step = j.value("step", int64_t{0});
  for (const auto& [name, g] : j.at("groups").items()) {
    FlightGroupCount& count = r.groups[name];
    count.ranks = g.at("ranks").get<std::vector<int>>();
    count.collectives = g.value("collectives", uint64_t{0});
    for (const char* direction : {"sends", "recvs"}) {
      if (!g.contains(direction)) continue;
      auto& into = std::string_view(direction) == "sends" ? count.sends : count.recvs;
      for (const auto& [peer, n] : g.at(direction).items()) into[std::stoi(peer)] = n.get<uint64_t>();
    }
  }
  for (const auto& o : j.at("ops")) {
    FlightRecordOp op;
    op.seq = o.at("seq").get<uint64_t>();
    op.group = o.at("group").get<std::string>();
    op.op = o.at("op").get<std::string>();
    op.dtype = o.value("dtype", "");
    op.plugin = o.value("plugin", "");
    op.phase = o.value("phase", "");
    op.unit = o.value("unit", "");
    op.state = o.at("state").get<std::string>();
    op.bytes = o.value("bytes", int64_t{0});
    op.microbatch = o.value("microbatch", int64_t{-1});
    op.step = o.value("step", int64_t{0});
    op.peer = o.value("peer", -1);
    op.issued_us = o.value("issued_us", int64_t{0});
    op.started_us = o.value("started_us", int64_t{0});
    op.ended_us = o.value("ended_us", int64_t{0});
    r.ops.push_back(std::move(op));
  }
  return r;
}

// "all_gather #1204 on group dp.1", "send #3 to rank 5 on group pp.0".
std::string name_op(const FlightRecordOp& op) {
  if (op.peer < 0) return concat(op.op, " #", op.seq, " on group ", op.group);
  return concat(op.op, " #", op.seq, op.op == "send" ? " to rank " : " from rank ", op.peer, " on group ", op.group);
}

// "fsdp param-gather h.7 (microbatch 2), step 17, 4.0 MiB of float32".
std::string op_context(const FlightRecordOp& op, bool with_size = true) {
  std::string who = op.plugin.empty() ? std::string("unknown caller") : op.plugin;
  if (!op.phase.empty()) who += " " + op.phase;
  if (!op.unit.empty()) who += " " + op.unit;
  if (op.microbatch >= 0) who += concat(" (microbatch ", op.microbatch, ")");
  who += concat(", step ", op.step);
  if (with_size && op.bytes > 0) who += concat(", ", human_bytes(op.bytes), op.dtype.empty() ? "" : " of " + op.dtype);
  return who;
}

std::string seconds_text(int64_t us) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), us >= 10'000'000 ? "%.0f s" : "%.1f s", static_cast<double>(us) / 1e6);
  return buf;
}

// Where each rank's operations are: (group, seq, peer, direction) -> op; peer -1 and
// direction 0 for a collective, direction 1 for a send, 2 for a receive.
using OpKey = std::tuple<std::string, uint64_t, int, int>;

int direction(const FlightRecordOp& op) { return op.peer < 0 ? 0 : op.op == "send" ? 1 : 2; }
using OpIndex = std::map<int, std::map<OpKey, const FlightRecordOp*>>;

OpIndex index_ops(const FlightRecords& records) {
  OpIndex index;
  for (const auto& [rank, record] : records.ranks) {
    for (const auto& op : record.ops) index[rank][{op.group, op.seq, op.peer, direction(op)}] = &op;
  }
  return index;
}

const FlightRecordOp* find_op(const OpIndex& index, int rank, const OpKey& key) {
  const auto mine = index.find(rank);
  if (mine == index.end()) return nullptr;
  const auto it = mine->second.find(key);
  return it == mine->second.end() ? nullptr : it->second;
}

std::string signature(const FlightRecordOp& op) { return concat(op.op, " with ", human_bytes(op.bytes), " of ", op.dtype); }

// Collectives whose members disagree at the same number, the first per group.
void find_collective_desyncs(const OpIndex& index, FlightFindings& out) {
  std::map<std::pair<std::string, uint64_t>, std::vector<std::pair<int, const FlightRecordOp*>>> by_number;
  for (const auto& [rank, ops] : index) {
    for (const auto& [key, op] : ops) {
      if (std::get<2>(key) < 0) by_number[{std::get<0>(key), std::get<1>(key)}].push_back({rank, op});
    }
  }
  std::set<std::string> reported;
  for (const auto& [number, members] : by_number) {
    if (reported.count(number.first)) continue;
    std::map<std::string, std::vector<int>> sides;
    for (const auto& [rank, op] : members) sides[signature(*op)].push_back(rank);
    if (sides.size() < 2) continue;
    reported.insert(number.first);
    std::string text;
    for (const auto& [sig, ranks] : sides) {
      const FlightRecordOp& op = *index.at(ranks.front()).at({number.first, number.second, -1, 0});
      text += concat(text.empty() ? "" : " where ", ranks.size() == 1 ? "rank " : "ranks ", rank_list(ranks),
                     " issued ", sig, " (", op_context(op, false), ")");
    }
    out.desync.push_back(concat("the ranks disagree at collective #", number.second, " on group ", number.first, ": ",
                                text, " — a desync"));
  }
}

// A rank's k-th send to a peer meets the peer's k-th receive from it: another size or
// dtype there is a desync.
void find_p2p_desyncs(const OpIndex& index, FlightFindings& out) {
  for (const auto& [rank, ops] : index) {
    for (const auto& [key, op] : ops) {
      const int peer = std::get<2>(key);
      if (std::get<3>(key) != 1 || !index.count(peer)) continue;
      const auto other = index.at(peer).find({std::get<0>(key), std::get<1>(key), rank, 2});
      if (other == index.at(peer).end()) continue;
      const FlightRecordOp& theirs = *other->second;
      if (theirs.bytes == op->bytes && theirs.dtype == op->dtype) continue;
      out.desync.push_back(concat("rank ", rank, "'s ", name_op(*op), " (", op_context(*op), ") met rank ", peer, "'s ",
                                  name_op(theirs), " (", op_context(theirs), ") — a desync"));
    }
  }
}

struct Blocked {
  const FlightRecordOp* op = nullptr;  // the oldest operation the rank waits in that a peer has not entered
  std::vector<int> culprits;           // the peers that never entered it (or wrote no record)
};

std::vector<int> missing_from(const FlightRecords& records, int rank, const FlightRecordOp& op) {
  std::vector<int> culprits;
  const RankFlightRecord& mine = records.ranks.at(rank);
  const auto group = mine.groups.find(op.group);
  if (group == mine.groups.end()) return culprits;
  const std::vector<int> peers = op.peer >= 0 ? std::vector<int>{op.peer} : group->second.ranks;
  for (int peer : peers) {
    if (peer == rank) continue;
    const auto theirs = records.ranks.find(peer);
    if (theirs == records.ranks.end()) {
      culprits.push_back(peer);
      continue;
    }
    const auto their_group = theirs->second.groups.find(op.group);
    uint64_t entered = 0;
    if (their_group != theirs->second.groups.end()) {
      if (op.peer < 0) {
        entered = their_group->second.collectives;
      } else {
        // My receive waits on their send to me, my send on their receive from me.
        const auto& counts = op.op == "send" ? their_group->second.recvs : their_group->second.sends;
        if (const auto it = counts.find(rank); it != counts.end()) entered = it->second;
      }
    }
    if (entered < op.seq) culprits.push_back(peer);
  }
  return culprits;
}

std::map<int, Blocked> blocked_ranks(const FlightRecords& records) {
  std::map<int, Blocked> blocked;
  for (const auto& [rank, record] : records.ranks) {
    for (const auto& op : record.ops) {
      if (op.done()) continue;
      std::vector<int> culprits = missing_from(records, rank, op);
      if (culprits.empty()) continue;
      blocked[rank] = {&op, std::move(culprits)};
      break;  // the oldest
    }
  }
  return blocked;
}

// What the rank that held the others up was doing instead.
std::string culprit_state(const FlightRecords& records, int culprit, const std::string& group) {
  const auto it = records.ranks.find(culprit);
  if (it == records.ranks.end()) return concat("rank ", culprit, " wrote no flight record (killed, or stopped)");
  const RankFlightRecord& r = it->second;
  const FlightRecordOp* last_on_group = nullptr;
  const FlightRecordOp* waiting = nullptr;
  for (const auto& op : r.ops) {
    if (op.group == group) last_on_group = &op;
    if (!op.done() && waiting == nullptr) waiting = &op;
  }
  const bool crashed = r.reason.rfind("it crashed", 0) == 0;  // its crash handler's words
  std::string text = concat("rank ", culprit, crashed ? " " + r.reason.substr(3) + ", " : " ", "was at step ", r.step);
  if (waiting != nullptr) {
    text += concat(", waiting in ", name_op(*waiting), " (", op_context(*waiting), ")");
  } else {
    text += ", in no operation";
  }
  if (last_on_group != nullptr) text += concat("; its last on ", group, " was ", name_op(*last_on_group), ", ", last_on_group->state);
  return text;
}

// Of the ranks that held an operation up, the one where it began: one that wrote no record
// (killed, or stopped past answering) or crashed, before one that was stopped in the
// meantime (the launcher stops every rank once one fails, some before they entered it).
int culprit_weight(const FlightRecords& records, int rank) {
  const auto it = records.ranks.find(rank);
  if (it == records.ranks.end()) return 0;
  return it->second.reason.rfind("it crashed", 0) == 0 ? 1 : 2;
}

int likeliest_culprit(const FlightRecords& records, const std::vector<int>& culprits) {
  return *std::min_element(culprits.begin(), culprits.end(),
                           [&](int a, int b) { return culprit_weight(records, a) < culprit_weight(records, b); });
}

// Once a rank died or crashed, the launcher stops the others, some before they entered the
// operation it held up: those are named apart, not as ranks that never entered it.
std::vector<int> stopped_before_entering(const FlightRecords& records, std::vector<int>& culprits) {
  const bool any_origin =
      std::any_of(culprits.begin(), culprits.end(), [&](int c) { return culprit_weight(records, c) < 2; });
  std::vector<int> stopped;
  if (!any_origin) return stopped;
  for (int c : culprits) {
    if (culprit_weight(records, c) == 2) stopped.push_back(c);
  }
  std::erase_if(culprits, [&](int c) { return culprit_weight(records, c) == 2; });
  return stopped;
}

void find_hang(const FlightRecords& records, bool live, FlightFindings& out) {
  const std::map<int, Blocked> blocked = blocked_ranks(records);
  if (blocked.empty()) return;
  // Start from the longest wait and follow each waiting culprit to the rank that waits on no one.
  int at = blocked.begin()->first;
  for (const auto& [rank, b] : blocked) {
    if (b.op->issued_us < blocked.at(at).op->issued_us) at = rank;
  }
  std::vector<int> chain = {at};
  while (true) {
    const Blocked& b = blocked.at(at);
    const auto next = std::find_if(b.culprits.begin(), b.culprits.end(), [&](int c) {
      return blocked.count(c) && std::find(chain.begin(), chain.end(), c) == chain.end();
    });
    if (next == b.culprits.end()) break;
    at = *next;
    chain.push_back(at);
  }
  const Blocked& last = blocked.at(at);
  const FlightRecordOp& op = *last.op;
  std::vector<int> waiters;
  int64_t waited_us = 0;
  for (const auto& [rank, b] : blocked) {
    if (b.op->group != op.group || b.op->seq != op.seq || (op.peer >= 0 && rank != at)) continue;
    waiters.push_back(rank);
    const int64_t end = b.op->ended_us > 0 ? b.op->ended_us : records.ranks.at(rank).written_us;
    waited_us = std::max(waited_us, end - b.op->issued_us);
  }
  std::vector<int> culprits = last.culprits;
  const std::vector<int> stopped_first = stopped_before_entering(records, culprits);
  const std::string what = op.peer < 0 ? name_op(op) : concat("its side of rank ", at, "'s ", name_op(op));
  // A rank with no record may have entered it and stopped inside: it held it up, at least.
  const bool all_silent = std::all_of(culprits.begin(), culprits.end(), [&](int c) { return !records.ranks.count(c); });
  std::string sentence = concat(culprits.size() == 1 ? "rank " : "ranks ", rank_list(culprits),
                                all_silent ? " held up " : " never entered ", what, " — ", op_context(op),
                                " — ", waiters.size() == 1 ? "rank " : "ranks ", rank_list(waiters), " waited ",
                                seconds_text(waited_us));
  // Ranks held up by the same culprits in other operations (a rank stopped between two
  // groups' operations keeps each group's members waiting at a different one).
  std::map<std::string, std::vector<int>> also;
  for (const auto& [rank, b] : blocked) {
    if (std::find(waiters.begin(), waiters.end(), rank) != waiters.end()) continue;
    const bool same_culprit = std::any_of(b.culprits.begin(), b.culprits.end(), [&](int c) {
      return std::find(culprits.begin(), culprits.end(), c) != culprits.end();
    });
    if (same_culprit) also[name_op(*b.op)].push_back(rank);
  }
  for (const auto& [what_else, ranks] : also) {
    sentence += concat("; ", ranks.size() == 1 ? "rank " : "ranks ", rank_list(ranks), " waited for ",
                       culprits.size() == 1 ? "it" : "them", " too, in ", what_else);
  }
  for (int c : culprits) sentence += "; " + culprit_state(records, c, op.group);
  if (!stopped_first.empty()) {
    sentence += concat("; ", stopped_first.size() == 1 ? "rank " : "ranks ", rank_list(stopped_first),
                       stopped_first.size() == 1 ? " was" : " were", " stopped before entering it, once ",
                       culprits.size() == 1 ? "that rank" : "those", " had failed");
  }
  out.culprit = FlightCulprit{likeliest_culprit(records, culprits), concat(name_op(op), " (", op_context(op, false), ")"),
                              op.step};
  if (chain.size() > 1) {
    std::string via;
    for (std::size_t i = 0; i + 1 < chain.size(); ++i) {
      via += concat(i == 0 ? "" : ", ", "rank ", chain[i], " waited on rank ", chain[i + 1], " in ",
                    name_op(*blocked.at(chain[i]).op));
    }
    sentence += " (" + via + ")";
  }
  // A running job's records (plait debug) catch ranks waiting for a moment all the time.
  if (live && waited_us < 1'000'000) sentence = concat("in flight for ", seconds_text(waited_us), ", not a hang yet: ", sentence);
  out.hang.push_back(sentence);
}

void find_everyone_in(const FlightRecords& records, FlightFindings& out) {
  if (!out.hang.empty() || !out.desync.empty()) return;  // a desync is why they never complete
  for (const auto& [rank, record] : records.ranks) {
    for (const auto& op : record.ops) {
      if (op.done() || op.peer >= 0) continue;
      out.hang.push_back(concat("every member of group ", op.group, " entered ", name_op(op), " (", op_context(op),
                                ") and rank ", rank, " never saw it complete: no rank held it up (look at the "
                                "backend or the network)"));
      return;
    }
  }
}

// A rank the others keep waiting for: of the last collectives completed everywhere in
// which the first rank in waited more than 20 ms for the last, the rank that kept the
// others waiting most of that time. Weighed by time, not by count: on a loaded machine
// every rank comes last now and then by a few tens of ms, which a count of arrivals mistakes
// for a share of the straggler's (CI: a rank slowed 300 ms per step named in only half).
void find_straggler(const FlightRecords& records, const OpIndex& index, FlightFindings& out) {
  constexpr int64_t kWaitedUs = 20'000;
  struct Entry {
    int64_t first_us;
    int last_rank;
    int64_t lag_us;
  };
  std::vector<Entry> entries;
  std::set<std::pair<std::string, uint64_t>> seen;
  for (const auto& [rank, record] : records.ranks) {
    for (const auto& op : record.ops) {
      if (op.peer >= 0 || !seen.insert({op.group, op.seq}).second) continue;
      const std::vector<int>& members = record.groups.at(op.group).ranks;
      int64_t first = INT64_MAX, latest = INT64_MIN;
      int latest_rank = -1;
      bool all = members.size() > 1;
      for (int m : members) {
        const FlightRecordOp* theirs = find_op(index, m, {op.group, op.seq, -1, 0});
        if (theirs == nullptr || !theirs->done()) {
          all = false;
          break;
        }
        first = std::min(first, theirs->issued_us);
        if (theirs->issued_us > latest) latest = theirs->issued_us, latest_rank = m;
      }
      if (all && latest - first >= kWaitedUs) entries.push_back({first, latest_rank, latest - first});
    }
  }
  if (entries.size() < 5) return;
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.first_us < b.first_us; });
  const std::size_t n = std::min<std::size_t>(entries.size(), 50);
  std::map<int, std::vector<int64_t>> lags;
  int64_t total_us = 0;
  for (std::size_t i = entries.size() - n; i < entries.size(); ++i) {
    lags[entries[i].last_rank].push_back(entries[i].lag_us);
    total_us += entries[i].lag_us;
  }
  for (auto& [rank, l] : lags) {
    const int64_t own_us = std::accumulate(l.begin(), l.end(), int64_t{0});
    if (l.size() < 3 || own_us * 10 < total_us * 6) continue;
    std::sort(l.begin(), l.end());
    out.straggler.push_back(concat("rank ", rank, " came last to ", l.size(), " of the last ", n,
                                   " collectives the others waited in, a median ", l[l.size() / 2] / 1000,
                                   " ms after the first: a straggler"));
  }
}

}  // namespace

std::string rank_list(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    if (j - i >= 2) {
      out += concat(ranks[i], "–", ranks[j]);
      i = j + 1;
    } else {
      out += std::to_string(ranks[i]);
      ++i;
    }
  }
  return out;
}

FlightRecords read_flight_records(const std::string& run_folder) {
  return read_flight_folder((fs::path(run_folder) / "flight").string());
}

FlightRecords read_flight_folder(const std::string& flight_folder) {
  FlightRecords records;
  const fs::path folder = flight_folder;
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return records;
  static const std::regex name(R"(rank-(\d+)\.json)");
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string file = entry.path().filename().string();
    if (!std::regex_match(file, name)) continue;
    try {
      PLAIT_CHECK(entry.is_regular_file(ec), "it is a folder, not a file", "");
      std::ifstream in(entry.path());
      const nlohmann::json j = nlohmann::json::parse(in);
      check_record_shape(j, std::stoi(file.substr(5)));
      RankFlightRecord r = parse_record(j);
      records.ranks[r.rank] = std::move(r);
    } catch (const Error& e) {
      records.unreadable.push_back(concat(file, ": not a flight record (", e.what(), ")"));
    } catch (const std::exception& e) {
      records.unreadable.push_back(concat(file, ": not a flight record (", json_problem(e), ")"));
    }
  }
  return records;
}

FlightFindings analyse_flight(const FlightRecords& records, int world_size, bool live) {
  FlightFindings out;
  for (int r = 0; r < world_size; ++r) {
    if (!records.ranks.count(r)) out.silent.push_back(r);
  }
  const OpIndex index = index_ops(records);
  find_collective_desyncs(index, out);
  find_p2p_desyncs(index, out);
  find_hang(records, live, out);
  find_everyone_in(records, out);
  find_straggler(records, index, out);
  for (const auto& [rank, record] : records.ranks) {  // no one held up: a crash is the news
    if (out.culprit || record.reason.rfind("it crashed", 0) != 0) continue;
    const auto in_op = std::find_if(record.ops.begin(), record.ops.end(), [](const FlightRecordOp& op) { return !op.done(); });
    out.culprit = FlightCulprit{rank, in_op == record.ops.end() ? "" : concat(name_op(*in_op), " (", op_context(*in_op, false), ")"),
                                record.step};
  }
  return out;
}

int64_t steps_ended(const FlightRecords& records) {
  int64_t least = -1;
  for (const auto& [rank, record] : records.ranks) least = least < 0 ? record.step : std::min(least, record.step);
  return std::max<int64_t>(least - 1, 0);
}

std::string flight_paragraph(const FlightRecords& records, const FlightFindings& findings, int world_size) {
  if (records.ranks.empty()) return "";
  std::vector<int> have;
  for (const auto& [rank, r] : records.ranks) have.push_back(rank);
  std::string text = concat("Flight records of ", have.size() == 1 ? "rank " : "ranks ", rank_list(have), ": ");
  std::vector<std::string> parts = findings.desync;
  parts.insert(parts.end(), findings.hang.begin(), findings.hang.end());
  parts.insert(parts.end(), findings.straggler.begin(), findings.straggler.end());
  if (parts.empty()) parts.push_back("no operation was left waiting, no two ranks disagree on one, and no rank lagged");
  for (const auto& [rank, r] : records.ranks) {  // a crash the findings do not already name
    const std::string crash = concat("rank ", rank, " crashed");
    if (r.reason.rfind("it crashed", 0) != 0 || text.find(crash) != std::string::npos) continue;
    bool named = false;
    for (const auto& p : parts) named = named || p.find(crash) != std::string::npos;
    if (!named) parts.push_back(concat(crash, r.reason.substr(10), " at step ", r.step));
  }
  for (std::size_t i = 0; i < parts.size(); ++i) text += (i ? "; " : "") + parts[i];
  if (!findings.silent.empty()) {
    text += concat(". No record from ", findings.silent.size() == 1 ? "rank " : "ranks ", rank_list(findings.silent),
                   " (killed, stopped, or never joined)");
  }
  for (const auto& u : records.unreadable) text += ". " + u;
  return text + ".";
}

}  // namespace plait
