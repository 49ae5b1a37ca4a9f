#include "data/batch_upload.hpp"

#include <ATen/ATen.h>

#include "data/document_runs.hpp"

namespace plait {
namespace {

at::Tensor upload(const at::Tensor& t, const c10::Device& device) {
  if (!t.defined() || t.device() == device) return t;
  // The caching host allocator keeps the pinned block until the copy that reads it is done.
  if (device.is_cuda()) return t.pin_memory().to(device, /*non_blocking=*/true);
  return t.to(device);
}

}  // namespace

std::vector<Batch> batches_on(const std::vector<Batch>& batches, const c10::Device& device, StageReads reads) {
  std::vector<Batch> out = batches;
  for (Batch& b : out) {
    if (device.is_cuda() && b.documents.defined()) {  // read here, while the documents are on the host
      DocumentRuns runs = document_runs(b.documents);
      b.document_starts = upload(runs.starts, device);
      b.longest_document = runs.longest;
    }
    // What the rank's stages do not read stays on the host (a later stage still reads the
    // inputs' shape for its receive buffers).
    if (reads.inputs) b.inputs = upload(b.inputs, device);
    if (reads.targets) b.targets = upload(b.targets, device);
    b.documents = upload(b.documents, device);
    b.positions = upload(b.positions, device);
  }
  return out;
}

}  // namespace plait
