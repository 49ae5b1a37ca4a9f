// What a restart leaves behind: restarts.json read back as written, faults.jsonl's strikes
// (a torn last line skipped), and which launcher's report names a fault's origin.
#include <catch2/catch.hpp>

#include "distributed/restart_agreement.hpp"
#include "output/restart_record.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;

TEST_CASE("restarts.json holds every restart as written, its unknowns as null", "[restart]") {
  TempDir dir;
  RestartRecord a;
  a.restart = 1;
  a.cause = "rank 2 (pid 7) was killed by signal 9 (Killed)";
  a.rank = 2;
  a.fault = "kill rank=2 step=7";
  a.step_reached = 6;
  a.resumed_from_step = 4;
  a.checkpoint = "/runs/x/checkpoints/step-4";
  a.refused_checkpoints = {"step-6: checkpoint file rank-1.safetensors fails its checksum"};
  a.fault_to_notice_s = 0.1234;
  a.culprit_operation = "all_reduce #40 on group dp.0 (ddp grad-reduce, step 7)";
  a.culprit_step = 7;
  a.reported_by_rank = 0;
  RestartRecord b;
  b.restart = 2;
  b.cause = "stopped because the launcher on node 1 of 2 got signal 15";
  write_restart_records(dir.path().string(), {a, b});
  const auto json = nlohmann::json::parse(read_file(dir / "restarts.json"));
  CHECK(json[0].at("steps_lost") == 2);
  CHECK(json[0].at("fault_to_notice_s") == 0.123);
  CHECK(json[0].at("culprit").at("rank") == 2);
  CHECK(json[0].at("culprit").at("operation") == "all_reduce #40 on group dp.0 (ddp grad-reduce, step 7)");
  CHECK(json[0].at("culprit").at("step") == 7);
  CHECK(json[0].at("reported_by_rank") == 0);
  CHECK(json[1].at("rank").is_null());
  CHECK(json[1].at("culprit").is_null());
  CHECK(json[1].at("reported_by_rank").is_null());
  CHECK(json[1].at("fault").is_null());
  CHECK(json[1].at("checkpoint").is_null());
  const auto back = read_restart_records(dir.path().string());
  REQUIRE(back.size() == 2);
  CHECK(back[0].cause == a.cause);
  CHECK(back[0].rank == 2);
  CHECK(back[0].refused_checkpoints == a.refused_checkpoints);
  CHECK(back[0].culprit_operation == a.culprit_operation);
  CHECK(back[0].culprit_step == 7);
  CHECK(back[0].reported_by_rank == 0);
  CHECK(back[0].fault_to_notice_s == 0.123);
  CHECK_FALSE(back[0].restart_to_first_step_s.has_value());
  CHECK(back[1].rank == -1);
  CHECK(back[1].checkpoint.empty());
}

TEST_CASE("faults.jsonl: every strike a rank recorded, a line torn by a kill skipped", "[restart]") {
  TempDir dir;
  write_file(dir / "faults.jsonl",
             "{\"fault\":\"exit rank=3 step=3\",\"rank\":3,\"attempt\":0,\"where\":\"at the start of step 3\",\"at_us\":100}\n"
             "{\"fault\":\"abort rank=1 step=6 attempt=1\",\"rank\":1,\"attempt\":1,\"where\":\"at the start of step 6\","
             "\"at_us\":200}\n{\"fault\":\"kill ra");
  const auto strikes = read_fault_strikes(dir.path().string());
  REQUIRE(strikes.size() == 2);
  CHECK(strikes[1].fault == "abort rank=1 step=6 attempt=1");
  CHECK(strikes[1].attempt == 1);
  CHECK(strikes[1].at_us == 200);
}

TEST_CASE("the origin of a fault is the earliest end of a node's own rank, else the earliest notice", "[restart]") {
  StopReports reports;
  StopReport stopped_by_other{0, false, "stopped because rank 3 on node 1 of 2 was killed", -1, 100, "", 0};
  StopReport own_rank{1, false, "rank 3 (pid 9) was killed by signal 9 (Killed)", 3, 150, "kill rank=3 step=6", 90};
  reports.reports = {stopped_by_other, own_rank};
  REQUIRE(reports.origin());
  CHECK(reports.origin()->node == 1);
  CHECK(reports.origin()->fault == "kill rank=3 step=6");
  reports.reports = {stopped_by_other};
  CHECK(reports.origin()->node == 0);
  CHECK_FALSE(StopReports{}.origin());
}
