#include "model/document_layout.hpp"

#include <ATen/ATen.h>

namespace plait {
namespace {

thread_local std::optional<DocumentLayout> current_layout;

}  // namespace

DocumentLayout DocumentLayout::of(const at::Tensor& documents, const at::Tensor& positions, const at::Device& device) {
  const at::Tensor docs = documents.to(device);
  const int64_t T = docs.size(1);
  const at::Tensor same = docs.unsqueeze(2).eq(docs.unsqueeze(1));  // [B, T, T]
  const at::Tensor causal = at::ones({T, T}, docs.options().dtype(at::kBool)).tril();
  return {positions.to(device), same.logical_and(causal).unsqueeze(1)};
}

DocumentScope::DocumentScope(std::optional<DocumentLayout> layout) : previous_(std::move(current_layout)) {
  current_layout = std::move(layout);
}

DocumentScope::~DocumentScope() { current_layout = std::move(previous_); }

const DocumentLayout* current_document_layout() { return current_layout ? &*current_layout : nullptr; }

}  // namespace plait
