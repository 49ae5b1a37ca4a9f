// Device-to-host reads per step, through the core's own accounting (metrics
// host_reads_by_step): one per step (the optimizer step's norm with the loss figures),
// plus one for the gathered figures on a logged step, under replicated and sharded data
// parallel and a pipeline, with every other wait for the device counted (none, on any
// rank: debug.count_host_syncs); and the records of a run that logs every 4th step.
#include <catch2/catch.hpp>

#include <string>
#include <thread>
#include <vector>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "support/test_support.hpp"
#include "train/host_syncs.hpp"

using namespace plait;
using namespace plait::test;

namespace {

// metrics.jsonl of an 8-step quickstart run with `sets` on top.
std::vector<nlohmann::json> run_records(const TempDir& dir, const std::vector<std::string>& sets) {
  std::vector<std::string> args = {"run", source_path("configs/quickstart.toml"), "--steps", "8", "--out",
                                   (dir / "run").string()};
  for (const auto& s : sets) args.insert(args.end(), {"--set", s});
  ProcessResult r = run_plait(args);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return read_metrics(dir / "run");
}

// The collectives the core adds to a step: one all-reduce of the loss over every rank
// (the tokens are known without one), and the pipeline's two barriers only on the
// logged step (they time the bubble); the plugins' own traffic is theirs.
std::vector<nlohmann::json> expect_one_read_per_step(const std::vector<std::string>& sets) {
  TempDir dir;
  std::vector<std::string> every_fourth = sets;
  every_fourth.push_back("train.log_every=4");
  const auto records = run_records(dir, every_fourth);
  REQUIRE(records.size() == 2);
  for (std::size_t k = 0; k < records.size(); ++k) {
    INFO(records[k].dump());
    CHECK(records[k].at("step").get<int>() == 4 * static_cast<int>(k + 1));
    CHECK(records[k].at("host_reads_by_step") == nlohmann::json::array({1, 1, 1, 2}));
    CHECK(records[k].at("comm").at("world.all_reduce").at("calls").get<int>() == 4);  // 4 steps' losses
    CHECK(records[k].at("comm_bytes_by").at("core").get<double>() > 0.0);
  }
  return records;
}

}  // namespace

TEST_CASE("one device-to-host read per step outside logged steps: ddp on 2 ranks, with no other wait on any rank", "[runs]") {
  const auto records = expect_one_read_per_step({"debug.count_host_syncs=true"});
  for (const auto& r : records) {
    CHECK(r.at("host_syncs_by_step") == nlohmann::json::array({0, 0, 0, 0}));
    CHECK(r.at("ranks_summary").at("host_syncs").at("max").get<double>() == 0.0);
  }
}

TEST_CASE("one device-to-host read per step outside logged steps: zero stage 3 on a 2-stage 1f1b pipeline", "[runs]") {
  const auto records = expect_one_read_per_step({"parallel.dp=1", "parallel.pp=2", "parallel.pipeline=1f1b",
                                                 "parallel.data=zero", "zero.stage=3", "train.grad_accum=4"});
  for (const auto& r : records) CHECK(r.at("comm").at("pp.barrier").at("calls").get<int>() == 2);  // the logged step's
}

TEST_CASE("logging every step reads twice per step, and the losses do not depend on log_every", "[runs]") {
  TempDir every, fourth;
  const auto all = run_records(every, {});
  const auto some = run_records(fourth, {"train.log_every=4"});
  REQUIRE(all.size() == 8);
  for (const auto& r : all) CHECK(r.at("host_reads_by_step") == nlohmann::json::array({2}));
  REQUIRE(some.size() == 2);
  CHECK(some[0].at("loss").get<double>() == all[3].at("loss").get<double>());
  CHECK(some[1].at("loss").get<double>() == all[7].at("loss").get<double>());
}

TEST_CASE("the host-sync counter sees uploads the host waits out, and not a non-blocking one from pinned memory",
          "[runs][syncs]") {
  HostSyncCounter counter;
  counter.start(at::kCPU);
  counter.take();
  const at::Tensor host = at::ones({4});
  // The meta device stands in for a GPU here: a copy onto it is an upload.
  at::empty({4}, at::TensorOptions().device(at::kMeta)).copy_(host);
  CHECK(counter.take() == 1);
  at::empty({4}, at::TensorOptions().device(at::kMeta)).copy_(host, /*non_blocking=*/true);  // pageable: staged
  CHECK(counter.take() == 1);
  (void)host.to(at::kMeta);
  CHECK(counter.take() == 1);
  at::empty({4}).copy_(host);  // within the host
  CHECK(counter.take() == 0);
  {
    const CountedRead core_read;  // the core's own, counted elsewhere
    at::empty({4}, at::TensorOptions().device(at::kMeta)).copy_(host);
  }
  CHECK(counter.take() == 0);
  CHECK(copy_waits_for_device(/*to_host=*/false, /*from_host=*/true, /*non_blocking=*/true, /*from_pinned=*/false));
  CHECK_FALSE(copy_waits_for_device(false, true, true, /*from_pinned=*/true));
  CHECK(copy_waits_for_device(false, true, /*non_blocking=*/false, true));
  CHECK(copy_waits_for_device(/*to_host=*/true, /*from_host=*/false, true, false));
  CHECK_FALSE(copy_waits_for_device(false, false, false, false));
}

TEST_CASE("on a GPU the host-sync counter counts CUDA's own sync-debug warnings on every thread and forwards other "
          "warnings",
          "[runs][syncs]") {
  struct KeptWarnings : c10::WarningHandler {
    std::vector<std::string> seen;
    void process(const c10::Warning& w) override { seen.push_back(w.msg()); }
  } kept;
  const c10::WarningUtils::WarningHandlerGuard keep(&kept);
  HostSyncCounter counter;
  counter.start(c10::Device(c10::kCUDA, 0));  // no GPU needed: the watch is c10's flag and a handler
  counter.take();
  // What c10::cuda::warn_or_error_on_sync raises at a stream, event or device synchronise.
  TORCH_WARN("called a synchronizing CUDA operation");
  CHECK(counter.take() == 1);
  std::thread device_thread([] {
    (void)at::ones({2}).sum();  // its first operator puts the counting handler on this thread
    TORCH_WARN("called a synchronizing CUDA operation");
    TORCH_WARN("called a synchronizing CUDA operation");
  });
  device_thread.join();
  CHECK(counter.take() == 2);
  {
    const CountedRead core_read;
    TORCH_WARN("called a synchronizing CUDA operation");
  }
  CHECK(counter.take() == 0);
  TORCH_WARN("some other warning");
  CHECK(counter.take() == 0);
  CHECK(kept.seen == std::vector<std::string>{"some other warning"});
  // A read and a blocking upload are CUDA's to report here, not counted twice by the
  // operator observer; a non-blocking upload from pageable memory CUDA does not report.
  (void)at::ones({2}).sum().item<float>();
  CHECK(counter.take() == 0);
}
