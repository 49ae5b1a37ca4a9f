#include "support/megatron_table.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "support/test_support.hpp"

namespace plait::test {

double MegatronRow::paper_flops() const {
  const double B = static_cast<double>(global_batch), s = kMegatronSeqLen, l = static_cast<double>(layers),
               h = static_cast<double>(hidden), V = kMegatronVocab;
  return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
}

std::vector<MegatronRow> megatron_table1() {
  std::ifstream in(source_path("tests/data/megatron-2021-table1.csv"));
  std::vector<MegatronRow> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.rfind("params", 0) == 0) continue;
    std::replace(line.begin(), line.end(), ',', ' ');
    std::istringstream fields(line);
    MegatronRow r;
    fields >> r.params_billion >> r.heads >> r.hidden >> r.layers >> r.tp >> r.pp >> r.gpus >> r.global_batch >>
        r.tflops_per_gpu;
    rows.push_back(r);
  }
  return rows;
}

RankShape megatron_rank_shape(const MegatronRow& r, int64_t tp, const std::string& checkpointing, int64_t micro_batch) {
  RankShape q;
  q.model.family = "gpt2";
  q.model.attention = "math";  // 2021: the scores materialised, softmax fused
  q.model.dropout = 0.1;
  q.model.n_layer = r.layers;
  q.model.n_head = q.model.n_kv_head = r.heads;
  q.model.n_embd = r.hidden;
  q.model.ffn_hidden = 4 * r.hidden;
  q.model.vocab_size = kMegatronVocab;
  q.model.block_size = kMegatronSeqLen;
  q.seq_len = kMegatronSeqLen;
  q.micro_batch = micro_batch;
  q.tp = tp;
  q.checkpointing = checkpointing;
  q.activation_bytes_per_element = q.stat_bytes_per_element = 2;  // fp16
  return q;
}

}  // namespace plait::test
