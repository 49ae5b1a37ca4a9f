#pragma once
// Helpers for the pipeline tests (core and schedule plugins): a schedule plan made the
// way the launcher makes it, and the equivalence harness on a pipelined quickstart.
#include <string>
#include <vector>

#include "pipeline/schedule_plan.hpp"
#include "support/test_support.hpp"

namespace plait::test {

// The launcher's plan for configs/quickstart.toml with `schedule` on `pp` ranks, `m`
// microbatches and `sets` on top (a model deep enough for 8 stages).
SchedulePlan quickstart_schedule(const std::string& schedule, int pp, int m, const std::vector<std::string>& sets = {});

// Trainable parameters the harness compares for a family at a depth.
int compared_parameters(const std::string& family, int n_layer);

// `plait check` of the quickstart under `schedule` on `pp` stages of an `n_layer` model
// (4 microbatches, clipping on, 4 steps), with `sets` on top; expects a PASS over every
// parameter.
void expect_pipeline_equivalent(const std::string& schedule, int pp, const std::string& family, const std::string& dtype,
                                const std::vector<std::string>& sets = {}, int n_layer = 4);

}  // namespace plait::test

// The equivalence matrix every schedule must pass: 2 and 4 pipeline ranks, gpt2 and
// llama, float64 and float32, on models of `layers2` and `layers4` blocks; and in
// float64 under NCCL's point-to-point semantics ([gloo] p2p = "nccl") on sequences of
// 256 positions, whose messages are past any buffer NCCL would give a blocking send.
// The order of sends and receives depends on the schedule and the stage count, not on
// the family, so the NCCL cases take one family per stage count.
#define PLAIT_PIPELINE_CASE(schedule, family, pp, dtype, layers)                                           \
  TEST_CASE(schedule " on " #pp " ranks, " family ", " dtype ", equals the single process", "[" schedule "]") { \
    plait::test::expect_pipeline_equivalent(schedule, pp, family, dtype, {}, layers);                      \
  }
#define PLAIT_PIPELINE_NCCL_CASE(schedule, family, pp, layers)                                                  \
  TEST_CASE(schedule " on " #pp " ranks, " family ", float64, under NCCL's point-to-point order, equals the single " \
            "process", "[" schedule "]") {                                                                       \
    plait::test::expect_pipeline_equivalent(schedule, pp, family, "float64",                                     \
                                            {"gloo.p2p=nccl", "data.seq_len=256", "model.block_size=256"}, layers); \
  }
#define PLAIT_PIPELINE_EQUIVALENCE_MATRIX(schedule, layers2, layers4)   \
  PLAIT_PIPELINE_NCCL_CASE(schedule, "gpt2", 2, layers2)                \
  PLAIT_PIPELINE_NCCL_CASE(schedule, "llama", 4, layers4)               \
  PLAIT_PIPELINE_CASE(schedule, "gpt2", 2, "float64", layers2)          \
  PLAIT_PIPELINE_CASE(schedule, "gpt2", 2, "float32", layers2)          \
  PLAIT_PIPELINE_CASE(schedule, "gpt2", 4, "float64", layers4)          \
  PLAIT_PIPELINE_CASE(schedule, "gpt2", 4, "float32", layers4)          \
  PLAIT_PIPELINE_CASE(schedule, "llama", 2, "float64", layers2)         \
  PLAIT_PIPELINE_CASE(schedule, "llama", 2, "float32", layers2)         \
  PLAIT_PIPELINE_CASE(schedule, "llama", 4, "float64", layers4)         \
  PLAIT_PIPELINE_CASE(schedule, "llama", 4, "float32", layers4)
