// [debug] trace_steps on a dp 2 x pp 2 run (ddp, 1f1b): one Chrome trace of every rank,
// each rank's forwards and backwards in its schedule's order (and each unit's forward and
// backward inside them) adding up to the busy time it reports, every collective as an async
// event with its tag, every send linked by a flow to its receive on the other rank, and
// per-rank files with their distributedInfo for Holistic Trace Analysis.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "support/test_support.hpp"

using namespace plait::test;
using Json = nlohmann::json;

namespace {

constexpr int kCompute = 1, kTransfers = 3;

struct Seen {
  std::map<int, int> stage_of;  // pid -> pipeline stage, from the process names
  std::map<int, std::string> order;  // pid -> "F0 F1 B0 ..."
  std::map<int, double> busy_us;
  std::map<int, int> waits;
  std::map<int, std::vector<Json>> units, computes;  // pid -> unit slices; forward and backward slices
  std::map<uint64_t, Json> opened;   // collective id -> its begin event
  std::map<uint64_t, int> closed;
  std::map<uint64_t, std::vector<Json>> flows;
  std::vector<Json> transfers;
};

void look_at(Seen& s, const Json& e) {
  const std::string ph = e.at("ph");
  const int pid = e.at("pid");
  if (ph == "M") {
    if (e.at("name") != "process_name") return;
    std::smatch m;
    const std::string name = e.at("args").at("name");
    REQUIRE(std::regex_search(name, m, std::regex("^rank (\\d) \\(pp (\\d), dp (\\d), tp 0\\)$")));
    CHECK(std::stoi(m[1]) == pid);
    s.stage_of[pid] = std::stoi(m[2]);
    return;
  }
  REQUIRE(e.at("ts").is_number());
  if (ph == "X") {
    REQUIRE(e.at("dur").get<double>() >= 0.0);
    CHECK(e.at("args").at("step") == 2);
    const std::string cat = e.at("cat");
    const int tid = e.at("tid");
    if (tid == kCompute && (cat == "forward" || cat == "backward")) {
      s.order[pid] += e.at("name").get<std::string>() + " ";
      s.busy_us[pid] += e.at("dur").get<double>();
      s.computes[pid].push_back(e);
    }
    if (tid == kCompute && cat == "unit") s.units[pid].push_back(e);
    if (tid == kCompute && cat == "wait") ++s.waits[pid];
    if (tid == kTransfers) s.transfers.push_back(e);
  } else if (ph == "b") {
    s.opened[e.at("id").get<uint64_t>()] = e;
  } else if (ph == "e") {
    ++s.closed[e.at("id").get<uint64_t>()];
  } else if (ph == "s" || ph == "f") {
    s.flows[e.at("id").get<uint64_t>()].push_back(e);
  }
}

// Each forward or backward ("F2", "B2") holds its units' slices ("F2 h.0", "B2 h.0"), the
// backward's in the reverse of the forward's order.
void check_units_inside(const std::vector<Json>& computes, const std::vector<Json>& units) {
  std::map<std::string, std::vector<std::string>> inside;  // "F2" -> its units, in time order
  for (const Json& c : computes) {
    const std::string name = c.at("name");
    const double from = c.at("ts").get<double>(), to = from + c.at("dur").get<double>();
    std::vector<std::pair<double, std::string>> found;
    for (const Json& u : units) {
      const std::string unit = u.at("name");
      if (unit.rfind(name + " ", 0) != 0) continue;
      const double ts = u.at("ts").get<double>();
      INFO(unit << " at " << ts << " in " << name << " [" << from << ", " << to << "]");
      CHECK(ts >= from - 1.0);
      CHECK(ts + u.at("dur").get<double>() <= to + 1.0);
      found.emplace_back(ts, unit.substr(name.size() + 1));
    }
    std::sort(found.begin(), found.end());
    for (const auto& [ts, unit] : found) inside[name].push_back(unit);
  }
  for (const auto& [name, forward_units] : inside) {
    if (name[0] != 'F') continue;
    std::vector<std::string> reversed(forward_units.rbegin(), forward_units.rend());
    INFO(name);
    CHECK(forward_units.size() == 2);
    CHECK(inside["B" + name.substr(1)] == reversed);
  }
}

}  // namespace

TEST_CASE("a traced step of dp 2 x pp 2 is one Chrome trace with every rank, tagged collectives and linked sends",
          "[trace]") {
  TempDir dir;
  const ProcessResult r =
      run_quickstart(dir / "run", 3, {"parallel.pipeline=1f1b", "parallel.pp=2", "parallel.dp=2", "train.grad_accum=4",
                                      "data.micro_batch_size=2", "debug.trace_steps=[2]"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const Json trace = Json::parse(read_file(dir / "run" / "trace.json"));
  REQUIRE(trace.at("traceEvents").is_array());
  Seen s;
  for (const Json& e : trace.at("traceEvents")) look_at(s, e);

  // Every rank, its schedule's order, its units' forwards and its waits for receives.
  REQUIRE(s.stage_of.size() == 4);
  const auto metrics = read_metrics(dir / "run");
  for (const auto& [pid, stage] : s.stage_of) {
    INFO("rank " << pid << " (stage " << stage << ")");
    CHECK(s.order[pid] == (stage == 0 ? "F0 F1 B0 F2 B1 F3 B2 B3 " : "F0 B0 F1 B1 F2 B2 F3 B3 "));
    CHECK(s.units[pid].size() == 4 * 2 * 2);  // the tiny gpt2: embedding and block 0, then block 1 and the head
    check_units_inside(s.computes[pid], s.units[pid]);
    CHECK(s.waits[pid] == 4);      // stage 0 waits for each gradient, stage 1 for each activation
    const double reported = metrics[1].at("ranks")[static_cast<std::size_t>(pid)].at("pipeline_busy_us").get<double>();
    CHECK(s.busy_us[pid] == Approx(reported).epsilon(0.01));
  }

  // Collectives: every begin has its end, with op, bytes, group and who asked.
  std::set<std::string> seen_tags;
  for (const auto& [id, begin] : s.opened) {
    CHECK(s.closed[id] == 1);
    const Json& a = begin.at("args");
    CHECK(a.at("bytes").get<int64_t>() >= 0);
    seen_tags.insert(a.at("op").get<std::string>() + " " + a.at("axis").get<std::string>() + " " +
                     a.at("plugin").get<std::string>() + " " + a.at("phase").get<std::string>());
  }
  CHECK(seen_tags.count("all_reduce dp ddp grad-sync") == 1);
  CHECK(seen_tags.count("all_reduce world core loss-sum") == 1);

  // Sends and receives: each message's flow leaves the sender and enters the receiver.
  for (const auto& [id, pair] : s.flows) {
    REQUIRE(pair.size() == 2);
    const Json& from = pair[0].at("ph") == "s" ? pair[0] : pair[1];
    const Json& to = pair[0].at("ph") == "s" ? pair[1] : pair[0];
    CHECK(from.at("ph") == "s");
    CHECK(to.at("ph") == "f");
    CHECK(to.at("bp") == "e");
    CHECK(from.at("pid") != to.at("pid"));
  }
  // The pipeline's messages (besides them: the tied embedding's, the ranks' figures to rank 0).
  int activations = 0, gradients = 0;
  for (const Json& t : s.transfers) {
    const Json& a = t.at("args");
    CHECK((t.at("cat") == "send" || t.at("cat") == "recv"));
    CHECK(a.at("from_rank") != a.at("to_rank"));
    if (t.at("cat") != "send") continue;
    if (a.at("phase") == "send-activation") {
      ++activations;
      CHECK(s.stage_of[a.at("from_rank")] == 0);
      CHECK(s.stage_of[a.at("to_rank")] == 1);
    }
    if (a.at("phase") == "send-grad") ++gradients;
  }
  CHECK(activations == 2 * 4);  // per dp replica, one per microbatch
  CHECK(gradients == 2 * 4);
  CHECK(s.flows.size() * 2 == s.transfers.size());  // every send and receive is one end of a flow

  // One file per rank for Holistic Trace Analysis, with its distributedInfo.
  for (int rank = 0; rank < 4; ++rank) {
    const Json one = Json::parse(read_file(dir / "run" / "trace" / ("rank-" + std::to_string(rank) + ".json")));
    const Json& info = one.at("distributedInfo");
    CHECK(info.at("rank") == rank);
    CHECK(info.at("world_size") == 4);
    CHECK(info.at("backend") == "gloo");
    CHECK(info.at("pg_count").get<int>() == static_cast<int>(info.at("pg_config").size()));
    for (const Json& e : one.at("traceEvents")) CHECK(e.at("pid") == rank);
  }
}
