// Where a step's time goes: the phase clock's exclusive times, the summary of figures
// across ranks, and, in real runs, a breakdown that adds up to the step under several
// strategies, a straggler seen as the other ranks' exposed communication, and metrics
// records that keep every rank's figures only where asked.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "metrics/rank_summary.hpp"
#include "support/test_support.hpp"
#include "config/settings.hpp"
#include "plan/hardware.hpp"
#include "timing/device_peaks.hpp"
#include "timing/phase_clock.hpp"

using namespace plait;
using namespace plait::test;

namespace {

void busy_for(double ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double, std::milli>(ms);
  while (std::chrono::steady_clock::now() < until) {
  }
}

double ms_of(const PhaseTimes& t, Phase p) { return t.of(p) * 1e3; }

const std::vector<std::string> kPhases = {"forward", "backward",   "comm_exposed", "pipeline_idle", "optimizer",
                                          "data",    "checkpoint", "metrics",      "other"};

double time_ms(const nlohmann::json& rank, const std::string& phase) {
  return rank.at("time." + phase + "_ms").get<double>();
}

double phase_sum(const nlohmann::json& rank) {
  double sum = 0.0;
  for (const auto& p : kPhases) sum += time_ms(rank, p);
  return sum;
}

// The exposed time of every operation a rank lists, summed.
double per_op_sum(const nlohmann::json& rank) {
  double sum = 0.0;
  for (const auto& [key, value] : rank.items()) {
    if (key.rfind("time.comm_exposed.", 0) == 0) sum += value.get<double>();
  }
  return sum;
}

}  // namespace

TEST_CASE("a phase's time excludes what the scopes inside it took, and the phases add up to the lap", "[timing]") {
  // Each phase gets at least the work done in it, and at most the wall time of its block as
  // the test measures it: on a loaded machine a block can take longer than its work (CI: 24
  // ms for 20), which the phase must count, not a fixed margin.
  using Clock = std::chrono::steady_clock;
  const auto ms_since = [](Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  };
  PhaseClock clock;
  clock.install();
  clock.lap();
  double forward_block_ms = 0.0, comm_block_ms = 0.0, idle_block_ms = 0.0;
  {
    const auto forward_start = Clock::now();
    {
      const PhaseScope forward(Phase::forward);
      busy_for(30);
      const auto comm_start = Clock::now();
      {
        const std::string key = "dp.all_reduce";
        const PhaseScope comm(Phase::comm_exposed, key);
        busy_for(20);
      }
      comm_block_ms = ms_since(comm_start);
    }
    forward_block_ms = ms_since(forward_start);
  }
  {
    const auto idle_start = Clock::now();
    {
      const PhaseScope idle(Phase::pipeline_idle);
      busy_for(10);
      const PhaseScope absorbed(Phase::comm_exposed, "pp.recv");  // a wait for the peer stays idle time
      busy_for(10);
    }
    idle_block_ms = ms_since(idle_start);
  }
  std::thread([] {
    const PhaseScope elsewhere(Phase::optimizer);  // another thread: not this clock's
    busy_for(5);
  }).join();
  busy_for(5);
  const auto first_lap_called = Clock::now();
  const PhaseTimes t = clock.lap();
  const auto within = [](double ms, double work_ms, double block_ms) { return ms >= work_ms - 0.5 && ms <= block_ms + 0.5; };
  CHECK(within(ms_of(t, Phase::forward), 30, forward_block_ms - ms_of(t, Phase::comm_exposed)));
  CHECK(within(ms_of(t, Phase::comm_exposed), 20, comm_block_ms));
  CHECK(t.comm_s.size() == 1);
  CHECK(t.comm_s.at("dp.all_reduce") * 1e3 == Approx(ms_of(t, Phase::comm_exposed)).margin(1e-6));
  CHECK(within(ms_of(t, Phase::pipeline_idle), 20, idle_block_ms));
  CHECK(ms_of(t, Phase::optimizer) == 0.0);
  CHECK(ms_of(t, Phase::other) >= 5.0);
  double sum = 0.0;
  for (double s : t.seconds) sum += s;
  CHECK(sum == Approx(t.total_s).epsilon(1e-9));
  CHECK(t.scopes == 3);
  // The next lap starts where this one ended.
  busy_for(3);
  const PhaseTimes next = clock.lap();
  CHECK(ms_of(next, Phase::forward) == 0.0);
  CHECK(within(next.total_s * 1e3, 3, ms_since(first_lap_called)));
}

TEST_CASE("the summary across ranks names the ranks of the min and the max and skips unused operations",
          "[timing]") {
  const std::vector<RankFigures> ranks = {
      {{"peak_mem_bytes", 300}, {"time.forward_ms", 2.5}, {"time.comm_exposed.dp.send_ms", 0}},
      {{"peak_mem_bytes", 100}, {"time.forward_ms", 9.0}, {"time.comm_exposed.dp.send_ms", 0}},
      {{"peak_mem_bytes", 200}, {"time.forward_ms", 9.0}, {"time.comm_exposed.dp.send_ms", 0}},
      {{"peak_mem_bytes", 100}, {"time.forward_ms", 4.0}, {"time.comm_exposed.dp.send_ms", 0}},
  };
  const nlohmann::ordered_json s = rank_summary(ranks);
  CHECK(s.dump() ==
        R"({"peak_mem_bytes":{"min":100,"min_rank":1,"median":100,"max":300,"max_rank":0},)"
        R"("time.forward_ms":{"min":2.5,"min_rank":0,"median":4,"max":9,"max_rank":1}})");
  const nlohmann::ordered_json records = rank_records(ranks);
  CHECK(records[1].dump() == R"({"rank":1,"peak_mem_bytes":100,"time.forward_ms":9})");
}

TEST_CASE("the step-time breakdown adds up to the step under ddp, zero 3, 1f1b and megatron", "[timing]") {
  const std::vector<std::pair<std::string, std::vector<std::string>>> runs = {
      {"ddp", {}},
      {"zero3", {"parallel.data=zero", "zero.stage=3"}},
      {"1f1b", {"parallel.dp=1", "parallel.pp=2", "parallel.pipeline=1f1b", "train.grad_accum=4",
                "data.micro_batch_size=2"}},
      {"megatron", {"parallel.dp=1", "parallel.tp=2", "parallel.tensor=megatron"}},
  };
  for (const auto& [name, sets] : runs) {
    SECTION(name) {
      TempDir dir;
      const ProcessResult r = run_quickstart(dir / "run", 4, sets);
      INFO(r.output);
      REQUIRE(r.exit_code == 0);
      const auto metrics = read_metrics(dir / "run");
      REQUIRE(metrics.size() == 4);
      for (const auto& record : metrics) {
        REQUIRE(record.at("ranks").size() == 2);
        for (const auto& rank : record.at("ranks")) {
          INFO(name << " step " << record.at("step") << " rank " << rank.at("rank") << ": " << rank.dump());
          const double step_ms = rank.at("step_ms").get<double>();
          CHECK(phase_sum(rank) == Approx(step_ms).epsilon(0.02));
          CHECK(per_op_sum(rank) == Approx(time_ms(rank, "comm_exposed")).epsilon(0.02).margin(0.01));
          // Exclusive times: were a nested wait also charged to the phase around it, the
          // named phases would exceed the step and the sum would not match.
          CHECK(time_ms(rank, "other") >= 0.0);
          if (name != "1f1b" || rank.at("rank") == 0) CHECK(time_ms(rank, "forward") > 0.0);
          CHECK(time_ms(rank, "backward") > 0.0);
          CHECK(time_ms(rank, "optimizer") > 0.0);
          CHECK(time_ms(rank, "data") > 0.0);
          if (name == "1f1b") CHECK(time_ms(rank, "pipeline_idle") > 0.0);
          if (name != "1f1b") CHECK(time_ms(rank, "pipeline_idle") == 0.0);
        }
        // Each step but the first holds the report of the one before.
        if (record.at("step") != 1) CHECK(time_ms(record.at("ranks")[0], "metrics") > 0.0);
      }
    }
  }
}

TEST_CASE("a slowed rank shows up as the other rank's exposed communication", "[timing]") {
  TempDir dir;
  const ProcessResult r =
      run_quickstart(dir / "run", 4, {"debug.slow_rank=1", "debug.slow_ms=300", "train.warmup_steps=0"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto metrics = read_metrics(dir / "run");
  REQUIRE(metrics.size() == 4);
  for (const auto& record : metrics) {
    const auto& fast = record.at("ranks")[0];
    const auto& slow = record.at("ranks")[1];
    INFO("step " << record.at("step") << ": " << fast.dump() << "\n" << slow.dump());
    CHECK(time_ms(slow, "forward") >= 300.0);
    CHECK(time_ms(fast, "forward") < 150.0);
    CHECK(time_ms(fast, "comm_exposed") >= 200.0);
    CHECK(time_ms(slow, "comm_exposed") < 100.0);
    // DDP's waits are its gradient all-reduces over dp.
    CHECK(fast.at("time.comm_exposed.dp.all_reduce_ms").get<double>() >= 200.0);
    const auto& summary = record.at("ranks_summary");
    CHECK(summary.at("time.comm_exposed_ms").at("max_rank") == 0);
    CHECK(summary.at("time.forward_ms").at("max_rank") == 1);
  }
}

TEST_CASE("metrics records summarise the ranks, and keep each rank's figures up to 8 ranks or when asked",
          "[timing]") {
  TempDir dir;
  const ProcessResult summary_only =
      run_quickstart(dir / "summary", 2, {"parallel.dp=4", "data.micro_batch_size=4", "train.rank_metrics=summary"});
  INFO(summary_only.output);
  REQUIRE(summary_only.exit_code == 0);
  const auto metrics = read_metrics(dir / "summary");
  REQUIRE(metrics.size() == 2);
  for (const auto& record : metrics) {
    CHECK_FALSE(record.contains("ranks"));
    const auto& peak = record.at("ranks_summary").at("peak_mem_bytes");
    CHECK(peak.at("min").get<int64_t>() > 0);
    CHECK(peak.at("min").get<int64_t>() <= peak.at("median").get<int64_t>());
    CHECK(peak.at("median").get<int64_t>() <= peak.at("max").get<int64_t>());
    CHECK(peak.at("max_rank").get<int>() < 4);
    CHECK(record.at("ranks_summary").at("step_ms").at("max").get<double>() > 0.0);
    // The figures reach rank 0 by one collective, not by sends from every rank (NCCL would
    // connect rank 0 with each).
    CHECK_FALSE(record.at("comm").contains("world.send"));
    CHECK_FALSE(record.at("comm").contains("world.recv"));
  }
  // The second record counts the first report's all-gather, once.
  CHECK(metrics[1].at("comm").at("world.all_gather").at("calls").get<int64_t>() == 1);
  const ProcessResult all = run_quickstart(dir / "all", 2, {"parallel.dp=4", "data.micro_batch_size=4",
                                                            "train.phase_timing=false"});
  INFO(all.output);
  REQUIRE(all.exit_code == 0);
  const auto listed = read_metrics(dir / "all");
  REQUIRE(listed.back().at("ranks").size() == 4);
  CHECK(listed.back().at("ranks")[3].at("rank") == 3);
  CHECK_FALSE(listed.back().at("ranks")[3].contains("time.forward_ms"));
  CHECK_FALSE(listed.back().contains("time.forward_ms"));
}

TEST_CASE("MFU's denominator on a GPU is its data-sheet peak for the dtype unless peak_flops is set", "[timing][peaks]") {
  CHECK(known_peak_flops("NVIDIA H100 80GB HBM3", "bfloat16")->flops == Approx(989.4e12));
  CHECK(known_peak_flops("NVIDIA H100 80GB HBM3", "bfloat16")->model == "H100 SXM");
  CHECK(known_peak_flops("NVIDIA H100 PCIe", "bfloat16")->flops == Approx(756e12));
  CHECK(known_peak_flops("NVIDIA H200", "float16")->flops == Approx(989.4e12));
  CHECK(known_peak_flops("NVIDIA A100-SXM4-80GB", "float32")->flops == Approx(19.5e12));
  CHECK(known_peak_flops("NVIDIA B200", "float64")->flops == Approx(37e12));
  CHECK(known_peak_flops("NVIDIA A100-SXM4-80GB", "bfloat16")->source.find("data sheet") != std::string::npos);
  CHECK_FALSE(known_peak_flops("NVIDIA GeForce RTX 4090", "bfloat16").has_value());
  CHECK_FALSE(known_peak_flops("", "bfloat16").has_value());
  TrainSettings train;
  train.device = "cpu";
  train.dtype = "bfloat16";
  train.peak_flops = kDefaultPeakFlops;
  CHECK(effective_peak_flops(train) == kDefaultPeakFlops);  // the CPU has no table
  train.device = "cuda";
  train.peak_flops = 500e12;
  CHECK(effective_peak_flops(train) == 500e12);  // set: kept
}

TEST_CASE("the MFU peak table and the planner's hardware files agree on every GPU both know", "[timing][peaks]") {
  // One data sheet figure in two places (the planner needs node and link figures the run
  // does not, the run needs fp64 and PCIe rows the planner has no machine for): held equal.
  const std::vector<std::pair<std::string, std::string>> both = {
      {"a100-80g", "NVIDIA A100-SXM4-80GB"}, {"h100-sxm", "NVIDIA H100 80GB HBM3"},
      {"h200-sxm", "NVIDIA H200"},           {"b200", "NVIDIA B200"}};
  for (const auto& [file, reported] : both) {
    INFO(file);
    const Hardware hw = load_hardware(file);
    CHECK(known_peak_flops(reported, "bfloat16")->flops == Approx(hw.peak_bf16_tflops * 1e12));
    CHECK(known_peak_flops(reported, "float32")->flops == Approx(hw.peak_fp32_tflops * 1e12));
  }
}

namespace {

// A stream stand-in: marks carry the stream's time when they were put, and pass when the
// test says the device got there.
struct FakeStream {
  double now_s = 0.0;
  double reached_s = -1.0;
  struct Mark : StreamMark {
    const FakeStream* stream;
    double at_s;
    Mark(const FakeStream* s, double t) : stream(s), at_s(t) {}
    bool passed() const override { return stream->reached_s >= at_s; }
    double seconds_since(const StreamMark& earlier) const override {
      return at_s - static_cast<const Mark&>(earlier).at_s;
    }
  };
  StreamMarker marker() {
    return [this] { return std::make_unique<Mark>(this, now_s); };
  }
};

}  // namespace

TEST_CASE("on a GPU a phase is the stream's time between its marks, charged once the device has passed them",
          "[timing]") {
  FakeStream stream;
  PhaseClock clock(stream.marker());
  clock.install();
  {
    const PhaseScope forward(Phase::forward);
    stream.now_s = 0.030;  // the stream's work the forward queued
    {
      const PhaseScope comm(Phase::comm_exposed, "dp.all_reduce");
      stream.now_s = 0.050;  // the compute stream held back for the collective
    }
    stream.now_s = 0.060;
  }
  {
    const PhaseScope optimizer(Phase::optimizer);
    stream.now_s = 0.070;
  }
  // The host is at its lap with the device short of the optimizer's end: the forward is
  // read, the optimizer waits for the next lap rather than for the device.
  stream.reached_s = 0.065;
  const PhaseTimes first = clock.lap();
  CHECK(ms_of(first, Phase::forward) == Approx(40.0));  // 60 on the stream less the 20 nested
  CHECK(ms_of(first, Phase::comm_exposed) == Approx(20.0));
  CHECK(first.comm_s.at("dp.all_reduce") == Approx(0.020));
  CHECK(ms_of(first, Phase::optimizer) == 0.0);
  stream.reached_s = 1.0;
  const PhaseTimes second = clock.lap();
  CHECK(ms_of(second, Phase::optimizer) == Approx(10.0));
  CHECK(ms_of(second, Phase::forward) == 0.0);  // charged once
  CHECK(clock.lap().of(Phase::optimizer) == 0.0);
}
