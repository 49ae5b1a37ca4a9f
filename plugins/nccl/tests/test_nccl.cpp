// What can be checked of the nccl plugin on any machine: it loads, and its probe tells
// the truth about the GPUs here. Its collectives run in tools/gpu-check on a GPU machine.
#include <catch2/catch.hpp>

#include <c10/cuda/CUDAFunctions.h>

#include "run/prepare.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;

TEST_CASE("nccl: it loads, and is available exactly when a GPU is visible", "[plugin.nccl]") {
  PluginRegistry registry = discover_plugins();
  const PluginRecord* nccl = registry.find("nccl");
  REQUIRE(nccl != nullptr);
  CHECK(nccl->kind == "comm");
  const bool gpu = c10::cuda::device_count() > 0;
  CHECK(nccl->available == gpu);
  if (!gpu) {
    CHECK_THAT(nccl->unavailable_reason, Contains("no CUDA device is visible"));
    TempDir dir;
    ProcessResult r = run_plait({"config", "validate", source_path("configs/quickstart.toml"), "--set",
                                 "parallel.comm=nccl"});
    CHECK(r.exit_code != 0);
    CHECK_THAT(r.output, Contains("plugin 'nccl' cannot run here: no CUDA device is visible"));
  }
}
