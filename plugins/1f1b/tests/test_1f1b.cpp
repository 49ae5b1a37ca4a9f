// 1f1b: the schedule's shape (idle share as GPipe's, at most p-r microbatches in flight
// on rank r), the equivalence harness on 2 and 4 stages, both families, float64 and
// float32, and the 3D meshes: dp 2 x pp 2 x tp 2 under ddp, zero stage 1, fsdp, and zero
// stage 3 with sequence parallel under NCCL's point-to-point order (and with dropout).
#include <algorithm>

#include <catch2/catch.hpp>

#include "support/pipeline_support.hpp"

using namespace plait;
using namespace plait::test;

TEST_CASE("1f1b idles (p-1)/(m+p-1) and holds at most p-r microbatches on rank r", "[1f1b]") {
  for (int pp : {2, 4}) {
    for (int m : {1, 4, 8}) {
      const SchedulePlan plan = quickstart_schedule("1f1b", pp, m);
      INFO("pp " << pp << " m " << m);
      for (int r = 0; r < pp; ++r) {
        CHECK(plan.simulated.idle_fraction[r] == Approx(double(pp - 1) / (m + pp - 1)));
        CHECK(plan.simulated.peak_in_flight[r] == std::min(pp - r, m));
      }
    }
  }
}

PLAIT_PIPELINE_EQUIVALENCE_MATRIX("1f1b", 4, 4)

// 8 ranks: pipeline stages of tensor-parallel pairs, replicated over 2 data-parallel ranks.
#define THREE_D_EQUIVALENCE(family, data, ...)                                                              \
  TEST_CASE("dp 2 x pp 2 x tp 2 with 1f1b, megatron and " data ", " family ", equals the single process", \
            "[1f1b]") {                                                                                     \
    expect_pipeline_equivalent("1f1b", 2, family, "float64",                                                 \
                               {"parallel.dp=2", "parallel.tp=2", "parallel.tensor=megatron", __VA_ARGS__});  \
  }
THREE_D_EQUIVALENCE("gpt2", "ddp", "parallel.data=ddp")
THREE_D_EQUIVALENCE("gpt2", "zero stage 1", "parallel.data=zero", "zero.stage=1")
THREE_D_EQUIVALENCE("llama", "fsdp", "parallel.data=fsdp")
// Stages send each other 1/t of the positions.
THREE_D_EQUIVALENCE("gpt2", "ddp with sequence parallel", "parallel.data=ddp", "megatron.sequence_parallel=true")
// Under NCCL's point-to-point semantics, on sequences of 256 positions.
THREE_D_EQUIVALENCE("llama", "zero stage 3 with sequence parallel under NCCL's point-to-point order",
                    "parallel.data=zero", "zero.stage=3", "megatron.sequence_parallel=true", "gloo.p2p=nccl",
                    "data.seq_len=256", "model.block_size=256")
// Dropout keyed on global samples and positions: each dp rank's rows, each stage's sites,
// each tp rank's sequence part and each recomputation drop what the single process drops.
THREE_D_EQUIVALENCE("gpt2", "ddp with sequence parallel, dropout and checkpointing", "parallel.data=ddp",
                    "megatron.sequence_parallel=true", "model.dropout=0.1", "train.activation_checkpointing=full")
