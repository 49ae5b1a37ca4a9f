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

std::vector<Batch> batches_on(const std::vector<Batch>& batches, const c10::Device& device) {
  std::vector<Batch> out = batches;
  for (Batch& b : out) {
    if (device.is_cuda() && b.documents.defined()) {  // read here, while the documents are on the host
      DocumentRuns runs = document_runs(b.documents);
      b.document_starts = upload(runs.starts, device);
      b.longest_document = runs.longest;
    }
    b.inputs = upload(b.inputs, device);
    b.targets = upload(b.targets, device);
    b.documents = upload(b.documents, device);
    b.positions = upload(b.positions, device);
  }
  return out;
}

}  // namespace plait
