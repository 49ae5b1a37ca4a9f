#pragma once
// A packed batch's documents in the form flash attention's variable-length kernel reads:
// the B x T tokens taken row after row, each document's first offset there, and the
// longest document (cu_seqlens and max_seqlen). Made on the host from Batch::documents,
// so the kernel needs no read of the device's copy to learn its sizes.
#include <cstdint>

#include <ATen/core/Tensor.h>

namespace plait {

struct DocumentRuns {
  at::Tensor starts;    // [documents + 1] int32: 0, each next document's offset, B * T
  int64_t longest = 0;  // positions in the longest document
};

// `documents`: [B, T] int64 on the host, each position's document within its row (a new
// document where the index changes; padding after a row's last is one of its own).
DocumentRuns document_runs(const at::Tensor& documents);

}  // namespace plait
