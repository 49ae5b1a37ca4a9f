// The flight report on records made by hand: the rank that never entered a collective
// (and the one a chain of waiting ranks leads to), a rank that wrote nothing, ranks that
// disagree at one number, a send that meets a send, and a straggler.
#include <catch2/catch.hpp>

#include "debug/flight_report.hpp"
#include "distributed/supervisor.hpp"
#include "support/test_support.hpp"

using namespace plait;
using Catch::Matchers::Contains;

namespace {

constexpr int64_t kSecond = 1'000'000;

FlightRecordOp collective(const std::string& group, uint64_t seq, const std::string& state, int64_t issued_us,
                          int64_t bytes = 4096) {
  FlightRecordOp op;
  op.group = group;
  op.seq = seq;
  op.op = "all_reduce";
  op.dtype = "float32";
  op.bytes = bytes;
  op.plugin = "ddp";
  op.phase = "grad-sync";
  op.unit = "bucket 0";
  op.step = 3;
  op.state = state;
  op.issued_us = issued_us;
  return op;
}

// A rank of a dp 4 job whose last collective on dp.0 is `entered`, the last one pending unless `done`.
RankFlightRecord rank_at(int rank, uint64_t entered, bool done, int64_t written_us = 40 * kSecond) {
  RankFlightRecord r;
  r.rank = rank;
  r.step = 3;
  r.written_us = written_us;
  r.groups["dp.0"] = {{0, 1, 2, 3}, entered, {}, {}};
  for (uint64_t s = 1; s <= entered; ++s) {
    r.ops.push_back(collective("dp.0", s, s < entered || done ? "completed" : "started", 10 * kSecond + s));
  }
  return r;
}

FlightRecords records_of(std::vector<RankFlightRecord> ranks) {
  FlightRecords out;
  for (auto& r : ranks) out.ranks[r.rank] = std::move(r);
  return out;
}

}  // namespace

TEST_CASE("a rank that never entered the collective the others wait in is named with the op, its number and tag",
          "[debug]") {
  const FlightRecords records =
      records_of({rank_at(0, 12, false), rank_at(1, 12, false), rank_at(2, 11, true), rank_at(3, 12, false)});
  const FlightFindings f = analyse_flight(records, 4);
  REQUIRE(f.hang.size() == 1);
  CHECK_THAT(f.hang[0], Contains("rank 2 never entered all_reduce #12 on group dp.0 — ddp grad-sync bucket 0, step 3, "
                                 "4.0 KiB of float32 — ranks 0, 1, 3 waited 30 s") &&
                            Contains("rank 2 was at step 3, in no operation; its last on dp.0 was all_reduce #11 on "
                                     "group dp.0, completed"));
  CHECK(f.desync.empty());
  CHECK(f.silent.empty());
  CHECK_THAT(flight_paragraph(records, f, 4), Contains("Flight records of ranks 0–3: rank 2 never entered"));
}

TEST_CASE("the culprit a restart records is the rank that held the others up, with the operation and step, one that "
          "wrote no record before one the launcher stopped before it entered",
          "[debug]") {
  // Rank 3 was killed (no record); rank 2 was stopped by the launcher before it entered #12.
  RankFlightRecord stopped = rank_at(2, 11, true);
  stopped.reason = "rank 2 stops: it got signal 15 (Terminated) from pid 7, its parent";
  const FlightRecords records = records_of({rank_at(0, 12, false), rank_at(1, 12, false), stopped});
  const FlightFindings f = analyse_flight(records, 4);
  REQUIRE(f.culprit.has_value());
  CHECK(f.culprit->rank == 3);
  CHECK(f.culprit->operation == "all_reduce #12 on group dp.0 (ddp grad-sync bucket 0, step 3)");
  CHECK(f.culprit->step == 3);
  // The sentence leads with it, and names rank 2 apart: not as one that never entered.
  REQUIRE(f.hang.size() == 1);
  CHECK_THAT(f.hang[0], Contains("rank 3 held up all_reduce #12 on group dp.0") &&
                            Contains("; rank 2 was stopped before entering it, once that rank had failed") &&
                            !Contains("ranks 2, 3"));
  // A crash between operations, with no one waiting yet, names the crashed rank, in none.
  RankFlightRecord crashed = rank_at(1, 4, true);
  crashed.reason = "it crashed (SIGSEGV, Segmentation fault)";
  crashed.step = 5;
  const FlightFindings alone = analyse_flight(records_of({rank_at(0, 4, true), crashed, rank_at(2, 4, true),
                                                          rank_at(3, 4, true)}), 4);
  REQUIRE(alone.culprit.has_value());
  CHECK(alone.culprit->rank == 1);
  CHECK(alone.culprit->operation.empty());
  CHECK(alone.culprit->step == 5);
  CHECK_FALSE(analyse_flight(records_of({rank_at(0, 3, true), rank_at(1, 3, true)}), 2).culprit.has_value());
}

TEST_CASE("the steps every rank with a record had ended: one before the least step a rank was in", "[debug]") {
  RankFlightRecord behind = rank_at(1, 4, false);
  behind.step = 6;
  RankFlightRecord ahead = rank_at(0, 4, false);
  ahead.step = 7;
  CHECK(steps_ended(records_of({ahead, behind})) == 5);
  CHECK(steps_ended(FlightRecords{}) == 0);
}

TEST_CASE("a rank with no record is the one that held the others up, and the paragraph says it wrote none", "[debug]") {
  const FlightRecords records = records_of({rank_at(0, 7, false), rank_at(1, 7, false), rank_at(3, 7, false)});
  const FlightFindings f = analyse_flight(records, 4);
  REQUIRE(f.hang.size() == 1);
  CHECK_THAT(f.hang[0], Contains("rank 2 held up all_reduce #7 on group dp.0") &&
                            Contains("rank 2 wrote no flight record (killed, or stopped)"));
  CHECK(f.silent == std::vector<int>{2});
  CHECK_THAT(flight_paragraph(records, f, 4), Contains("No record from rank 2"));
}

TEST_CASE("a chain of waiting ranks is followed to the rank that waits on no one", "[debug]") {
  // Ranks 0 and 1 wait on dp.0 for rank 3, which waits on group tp.1 for rank 2, which does nothing.
  FlightRecords records = records_of({rank_at(0, 5, false), rank_at(1, 5, false), rank_at(2, 4, true), rank_at(3, 4, true)});
  for (int r : {2, 3}) records.ranks[r].groups["tp.1"] = {{2, 3}, r == 3 ? 2u : 1u, {}, {}};
  records.ranks[3].ops.push_back(collective("tp.1", 1, "completed", 11 * kSecond));
  records.ranks[3].ops.push_back(collective("tp.1", 2, "started", 12 * kSecond));
  records.ranks[2].ops.push_back(collective("tp.1", 1, "completed", 11 * kSecond));
  const FlightFindings f = analyse_flight(records, 4);
  REQUIRE(f.hang.size() == 1);
  CHECK_THAT(f.hang[0], Contains("rank 2 never entered all_reduce #2 on group tp.1") && Contains("rank 3 waited") &&
                            Contains("(rank 0 waited on rank 3 in all_reduce #5 on group dp.0)"));
}

TEST_CASE("ranks that disagree on a collective's size at the same number are a desync, named by both sides", "[debug]") {
  FlightRecords records = records_of({rank_at(0, 5, false), rank_at(1, 5, false), rank_at(2, 5, false), rank_at(3, 5, false)});
  records.ranks[1].ops.back().bytes = 2048;
  const FlightFindings f = analyse_flight(records, 4);
  REQUIRE(f.desync.size() == 1);
  CHECK_THAT(f.desync[0], Contains("the ranks disagree at collective #5 on group dp.0: ") &&
                              Contains("ranks 0, 2, 3 issued all_reduce with 4.0 KiB of float32") &&
                              Contains("rank 1 issued all_reduce with 2.0 KiB of float32") && Contains("a desync"));
}

TEST_CASE("two ranks that each send to the other and never receive are a hang, named, not a desync", "[debug]") {
  FlightRecords records;
  for (int r : {0, 1}) {
    RankFlightRecord rec;
    rec.rank = r;
    rec.groups["pp.0"] = {{0, 1}, 0, {{1 - r, 1}}, {}};
    FlightRecordOp op = collective("pp.0", 1, "started", 10 * kSecond);
    op.op = "send";
    op.peer = 1 - r;
    rec.ops.push_back(op);
    records.ranks[r] = rec;
  }
  const FlightFindings f = analyse_flight(records, 2);
  CHECK(f.desync.empty());
  REQUIRE(f.hang.size() == 1);
  CHECK_THAT(f.hang[0], Contains("never entered its side of rank ") && Contains("'s send #1 to rank ") &&
                            Contains(" on group pp.0"));
}

TEST_CASE("a rank the others keep waiting for is a straggler, and a wait of a moment is not a hang", "[debug]") {
  FlightRecords records = records_of({rank_at(0, 20, true), rank_at(1, 20, true), rank_at(2, 20, true), rank_at(3, 20, true)});
  for (auto& op : records.ranks[3].ops) op.issued_us += 150'000;  // 150 ms behind in every one
  const FlightFindings f = analyse_flight(records, 4);
  REQUIRE(f.straggler.size() == 1);
  CHECK_THAT(f.straggler[0], Contains("rank 3 came last to 20 of the last 20 collectives the others waited in, a median "
                                      "150 ms after the first: a straggler"));
  CHECK(f.hang.empty());
  // Scheduling noise is not a straggler.
  for (auto& op : records.ranks[3].ops) op.issued_us -= 149'000;
  CHECK(analyse_flight(records, 4).straggler.empty());
  // A job caught while the others wait 0.2 s for rank 3 (plait debug on a running job).
  records.ranks[3].groups["dp.0"].collectives = 19;
  records.ranks[3].ops.pop_back();
  for (int r : {0, 1, 2}) {
    records.ranks[r].ops.back().state = "started";
    records.ranks[r].written_us = records.ranks[r].ops.back().issued_us + 200'000;
  }
  CHECK_THAT(analyse_flight(records, 4).hang[0], Contains("rank 3 never entered all_reduce #20") && !Contains("in flight"));
  const FlightFindings caught = analyse_flight(records, 4, /*live=*/true);
  REQUIRE(caught.hang.size() == 1);
  CHECK_THAT(caught.hang[0], Contains("in flight for 0.2 s, not a hang yet: rank 3 never entered all_reduce #20"));
}

TEST_CASE("a straggler is told from a loaded machine's noise by the time it kept the others waiting", "[debug]") {
  // 40 collectives: rank 3 comes last by 300 ms in every fourth (the first of its slowed
  // steps), ranks 0-2 by 30 ms in the others, as on a machine busy with other jobs. Rank 3
  // comes last in only 10 of 40, but kept the others waiting 3 s of the 3.9 s.
  FlightRecords records = records_of({rank_at(0, 40, true), rank_at(1, 40, true), rank_at(2, 40, true), rank_at(3, 40, true)});
  for (std::size_t i = 0; i < 40; ++i) {
    const int late = i % 4 == 0 ? 3 : static_cast<int>(i % 3);
    records.ranks[late].ops[i].issued_us += late == 3 ? 300'000 : 30'000;
  }
  const FlightFindings f = analyse_flight(records, 4);
  REQUIRE(f.straggler.size() == 1);
  CHECK_THAT(f.straggler[0], Contains("rank 3 came last to 10 of the last 40 collectives the others waited in, a median "
                                      "300 ms after the first: a straggler"));
  // The same lags spread evenly over the ranks name nobody.
  for (std::size_t i = 0; i < 40; i += 4) {
    records.ranks[3].ops[i].issued_us -= 270'000;
  }
  CHECK(analyse_flight(records, 4).straggler.empty());
}

TEST_CASE("rank lists shorten runs of three or more", "[debug]") {
  CHECK(rank_list({3, 0, 1, 2}) == "0–3");
  CHECK(rank_list({0, 1, 3}) == "0, 1, 3");
  CHECK(rank_list({5, 0, 2, 3, 4}) == "0, 2–5");
}

TEST_CASE("ranks held up by the same rank in another operation are named beside those of the oldest one", "[debug]") {
  // Rank 0 waits for rank 1's send (its step report) on group world; ranks 2 and 3 are
  // already in the next all-reduce on dp.0, which rank 1 never entered either.
  FlightRecords records = records_of({rank_at(0, 4, true), rank_at(2, 5, false), rank_at(3, 5, false)});
  for (int r : {0, 2, 3}) records.ranks[r].groups["world"] = {{0, 1, 2, 3}, 0, {}, {}};
  records.ranks[0].groups["world"].recvs[1] = 9;
  FlightRecordOp recv = collective("world", 9, "started", 5 * kSecond);
  recv.op = "recv";
  recv.peer = 1;
  records.ranks[0].ops.push_back(recv);
  const FlightFindings f = analyse_flight(records, 4);
  REQUIRE(f.hang.size() == 1);
  CHECK_THAT(f.hang[0], Contains("rank 1 held up its side of rank 0's recv #9 from rank 1 on group world") &&
                            Contains("rank 0 waited") &&
                            Contains("ranks 2, 3 waited for it too, in all_reduce #5 on group dp.0"));
}

TEST_CASE("a send meets the peer's receive of the same number, whatever order each issued them in", "[debug]") {
  // A pipeline's two stages: stage 0 sends an activation and receives a gradient, stage 1
  // receives the activation and sends the gradient; each rank numbers its sends to and its
  // receives from the other apart, so issuing them in other orders is no desync.
  auto p2p = [](const std::string& op, int peer, uint64_t seq, int64_t bytes) {
    FlightRecordOp o = collective("pp.0", seq, "completed", 0);
    o.op = op;
    o.peer = peer;
    o.bytes = bytes;
    return o;
  };
  FlightRecords records;
  for (int r : {0, 1}) {
    records.ranks[r].rank = r;
    records.ranks[r].groups["pp.0"] = {{0, 1}, 0, {{1 - r, 1}}, {{1 - r, 1}}};
  }
  records.ranks[0].ops = {p2p("send", 1, 1, 4096), p2p("recv", 1, 1, 4096)};
  records.ranks[1].ops = {p2p("send", 0, 1, 4096), p2p("recv", 0, 1, 4096)};  // its send went first
  CHECK(analyse_flight(records, 2).desync.empty());
  records.ranks[1].ops[1].bytes = 2048;  // it receives half of what rank 0 sends
  const FlightFindings f = analyse_flight(records, 2);
  REQUIRE(f.desync.size() == 1);
  CHECK_THAT(f.desync[0], Contains("rank 0's send #1 to rank 1 on group pp.0") &&
                              Contains("met rank 1's recv #1 from rank 0 on group pp.0") && Contains("a desync"));
}

TEST_CASE("a rank whose error says only that a peer's connection went away is taken for an echo of the fault",
          "[debug]") {
  // gloo's words when the process on the other end died; the launcher names that process instead.
  CHECK(says_peer_lost("all_reduce #12 on group dp.0 failed: [gloo/transport/tcp/pair.cc:547] Connection closed by "
                       "peer [127.0.0.1]:40000"));
  CHECK(says_peer_lost("send to rank 2 failed: [gloo/transport/tcp/pair.cc:589] Connection reset by peer"));
  CHECK(says_peer_lost("recv failed: write: Broken pipe"));
  CHECK_FALSE(says_peer_lost("rank 1's communicator for group dp.0 was torn down ([debug] faults abort)"));
  CHECK_FALSE(says_peer_lost("all_reduce #12 on group dp.0 timed out after 3 s"));
}

// A record damaged on disk (by hand, a full disk, another tool) is named with what is wrong
// in plait's words, and the others are still read.
TEST_CASE("a damaged flight record is named with what is wrong with it, never with the JSON library's text", "[debug]") {
  namespace fs = std::filesystem;
  test::TempDir dir;
  const fs::path flight = dir / "flight";
  fs::create_directories(flight / "rank-1.json");  // a folder
  const std::string good_ops = R"("ops": [{"seq": 1, "group": "dp.0", "op": "all_reduce", "state": "completed"}])";
  const std::map<int, std::string> records = {
      {0, R"({"rank": 0, "groups": {"dp.0": {"ranks": [0, 2]}}, )" + good_ops + "}"},
      {2, R"({"rank": 2, "groups": null, )" + good_ops + "}"},
      {3, R"("hello")"},
      {4, R"({"rank": 1e30, "groups": {}, "ops": []})"},
      {5, R"({"rank": 5, "groups": {"dp.0": {"ranks": [0, 2]}}, "ops": [{"seq": 1, "group": "tp.9", "op": "x", "state": "completed"}]})"},
      {6, R"({"rank": 7, "groups": {}, "ops": []})"},
      {7, R"({"rank": 7, "groups": {}, "ops": {"seq": 1}})"},
  };
  for (const auto& [rank, text] : records) test::write_file(flight / concat("rank-", rank, ".json"), text);
  const FlightRecords read = read_flight_records(dir.path().string());
  CHECK(read.ranks.size() == 1);
  CHECK(read.ranks.count(0) == 1);
  std::string all;
  for (const auto& u : read.unreadable) all += u + "\n";
  INFO(all);
  CHECK(read.unreadable.size() == 7);
  CHECK_THAT(all, Contains("rank-1.json: not a flight record (it is a folder, not a file)"));
  CHECK_THAT(all, Contains("rank-2.json: not a flight record (its \"groups\" is not an object of groups)"));
  CHECK_THAT(all, Contains("rank-3.json: not a flight record (it holds string, not a record)"));
  CHECK_THAT(all, Contains("rank-4.json: not a flight record (its rank is 1e+30, not the 4 its name says)"));
  CHECK_THAT(all, Contains("rank-5.json: not a flight record (an operation names a group its \"groups\" lack"));
  CHECK_THAT(all, Contains("rank-6.json: not a flight record (its rank is 7, not the 6 its name says)"));
  CHECK_THAT(all, Contains("rank-7.json: not a flight record (its \"ops\" is not a list of operations)"));
  CHECK_THAT(all, !Contains("json.exception") && !Contains("cannot use") && !Contains("basic_filebuf"));
  const FlightFindings findings = analyse_flight(read, 8);
  CHECK(findings.silent.size() == 7);
}
