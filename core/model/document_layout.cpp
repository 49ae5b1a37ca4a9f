#include "model/document_layout.hpp"

#include <limits>

#include <ATen/ATen.h>

namespace plait {
namespace {

thread_local std::optional<DocumentLayout> current_layout;

}  // namespace

DocumentLayout DocumentLayout::of(const at::Tensor& documents, const at::Tensor& positions, const at::Device& device,
                                  const at::Tensor& starts, int64_t longest) {
  return {positions.to(device), documents.to(device), starts.defined() ? starts.to(device) : starts, longest};
}

at::Tensor DocumentLayout::allowed() const {
  if (!allowed_.defined()) {
    const int64_t T = documents.size(1);
    const at::Tensor same = documents.unsqueeze(2).eq(documents.unsqueeze(1));  // [B, T, T]
    const at::Tensor causal = at::ones({T, T}, documents.options().dtype(at::kBool)).tril();
    allowed_ = same.logical_and(causal).unsqueeze(1);
  }
  return allowed_;
}

at::Tensor DocumentLayout::additive(at::ScalarType dtype) const {
  if (!additive_.defined() || additive_.scalar_type() != dtype) {
    const at::Tensor mask = allowed();
    additive_ = at::zeros(mask.sizes(), mask.options().dtype(dtype))
                    .masked_fill_(mask.logical_not(), -std::numeric_limits<double>::infinity());
  }
  return additive_;
}

at::Tensor DocumentLayout::hidden() const {
  if (!hidden_.defined()) hidden_ = allowed().logical_not();
  return hidden_;
}

at::Tensor DocumentLayout::rows_of(const at::Tensor& table, at::ScalarType dtype) const {
  for (const auto& [source, rows] : gathered_) {
    if (source.is_same(table) && rows.scalar_type() == dtype) return rows;
  }
  const int64_t B = positions.size(0), T = positions.size(1), Q = table.size(1);
  gathered_.emplace_back(table, table.index_select(0, positions.reshape({-1})).view({B, 1, T, Q}).to(dtype));
  return gathered_.back().second;
}

void save_layout(SavedData& saved, const DocumentLayout* layout) {
  if (layout == nullptr) return;
  saved["document_positions"] = layout->positions;
  saved["document_rows"] = layout->documents;
  if (layout->starts.defined()) {
    saved["document_starts"] = layout->starts;
    saved["document_longest"] = layout->longest;
  }
}

std::optional<DocumentLayout> saved_layout(SavedData& saved) {
  if (saved.count("document_rows") == 0) return std::nullopt;
  const bool runs = saved.count("document_starts") != 0;
  return DocumentLayout(saved["document_positions"].toTensor(), saved["document_rows"].toTensor(),
                        runs ? saved["document_starts"].toTensor() : at::Tensor(),
                        runs ? saved["document_longest"].toInt() : 0);
}

DocumentScope::DocumentScope(std::optional<DocumentLayout> layout) : previous_(std::move(current_layout)) {
  current_layout = std::move(layout);
}

DocumentScope::~DocumentScope() { current_layout = std::move(previous_); }

const DocumentLayout* current_document_layout() { return current_layout ? &*current_layout : nullptr; }

}  // namespace plait
