#include "data/document_runs.hpp"

#include <algorithm>
#include <vector>

#include <ATen/ATen.h>

namespace plait {

DocumentRuns document_runs(const at::Tensor& documents) {
  const at::Tensor rows = documents.contiguous();
  const int64_t B = rows.size(0), T = rows.size(1);
  const int64_t* doc = rows.data_ptr<int64_t>();
  std::vector<int32_t> starts;
  DocumentRuns runs;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < T; ++t) {
      if (t == 0 || doc[b * T + t] != doc[b * T + t - 1]) {
        if (!starts.empty()) runs.longest = std::max<int64_t>(runs.longest, b * T + t - starts.back());
        starts.push_back(static_cast<int32_t>(b * T + t));
      }
    }
  }
  starts.push_back(static_cast<int32_t>(B * T));
  if (starts.size() >= 2) runs.longest = std::max<int64_t>(runs.longest, starts.back() - starts[starts.size() - 2]);
  runs.starts = at::tensor(starts, at::TensorOptions().dtype(at::kInt));
  return runs;
}

}  // namespace plait
