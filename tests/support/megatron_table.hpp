#pragma once
// Megatron-LM's 2021 Table 1 (tests/data/megatron-2021-table1.csv): GPT models from 1.7B
// to 1T parameters on A100s, with their parallel layout and the published throughput.
#include <cstdint>
#include <vector>

#include "plan/rank_shape.hpp"

namespace plait::test {

struct MegatronRow {
  double params_billion = 0;
  int64_t heads = 0, hidden = 0, layers = 0, tp = 0, pp = 0, gpus = 0, global_batch = 0;
  double tflops_per_gpu = 0;  // published
  int64_t dp() const { return gpus / (tp * pp); }
  // The paper's FLOPs per global batch: 96·B·s·l·h²·(1 + s/6h + V/16lh).
  double paper_flops() const;
};

constexpr int64_t kMegatronSeqLen = 2048, kMegatronVocab = 51200;

std::vector<MegatronRow> megatron_table1();

// The row's GPT model on one rank of tensor parallel `tp`, microbatches of `micro_batch`.
RankShape megatron_rank_shape(const MegatronRow& r, int64_t tp, const std::string& checkpointing = "full",
                              int64_t micro_batch = 1);

}  // namespace plait::test
