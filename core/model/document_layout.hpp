#pragma once
// Packed rows (data/packing.hpp): a row holds several documents, and each must see only
// itself. The executor sets the microbatch's layout around each forward (as DropoutScope
// does its samples); the embedding takes positions from it (gpt2's learned positions,
// llama's rotary ones restart at each document) and the attention core its mask: a
// query attends to the keys of its own document at or before it, a block-diagonal causal
// mask through scaled_dot_product_attention. Without a layout the model is causal over
// the whole row, as before.
#include <optional>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <c10/util/flat_hash_map.h>

namespace plait {

struct DocumentLayout {
  DocumentLayout(at::Tensor positions_, at::Tensor documents_, at::Tensor starts_ = {}, int64_t longest_ = 0)
      : positions(std::move(positions_)), documents(std::move(documents_)), starts(std::move(starts_)),
        longest(longest_) {}

  at::Tensor positions;  // [B, T] int64: each position's place within its document
  at::Tensor documents;  // [B, T] int64: each position's document
  // On a GPU, the documents as flash attention's variable-length kernel reads them
  // (data/document_runs.hpp: cu_seqlens, int32 on the device, and max_seqlen); undefined
  // elsewhere. Where that kernel runs, attention takes it instead of the mask.
  at::Tensor starts;
  int64_t longest = 0;

  // [B, 1, T, T] bool: query t may attend key s. Made on first use, so the
  // variable-length kernel's path never pays B x T^2 bytes for it.
  at::Tensor allowed() const;
  // `allowed` as the additive mask scaled_dot_product_attention adds to the scores (0 or
  // -inf) in `dtype`, made once per dtype and shared by every layer: given the bool mask,
  // SDPA makes this float copy itself in each layer and keeps it for backward (measured:
  // 4 bytes x B x T^2 per layer).
  at::Tensor additive(at::ScalarType dtype) const;
  // `allowed` negated, for the math kernel's masked_fill: once, not once per layer.
  at::Tensor hidden() const;
  // Rows `positions` of a [block_size, Q] table (llama's cos and sin), [B, 1, T, Q] in
  // `dtype`, gathered once per table and shared by every layer's q and k.
  at::Tensor rows_of(const at::Tensor& table, at::ScalarType dtype) const;

  mutable at::Tensor allowed_, additive_, hidden_;
  mutable std::vector<std::pair<at::Tensor, at::Tensor>> gathered_;  // (table, its rows)

  // From the batch's [B, T] document index and positions (Batch::documents, ::positions),
  // moved to `device`, with its variable-length form where the batch has one
  // (Batch::document_starts, ::longest_document).
  static DocumentLayout of(const at::Tensor& documents, const at::Tensor& positions, const at::Device& device,
                           const at::Tensor& starts = {}, int64_t longest = 0);
};

// A layout kept in a custom autograd function's saved data (`ctx->saved_data`) for its
// recomputation, which may run on autograd's device thread, outside the forward's scope:
// the batch's own tensors, nothing made. Nothing is saved for a null layout, and then
// saved_layout gives none.
using SavedData = ska::flat_hash_map<std::string, at::IValue>;
void save_layout(SavedData& saved, const DocumentLayout* layout);
std::optional<DocumentLayout> saved_layout(SavedData& saved);

// Sets this thread's layout while alive: the executor around each forward, activation
// checkpointing around its recomputation (which may run on autograd's device thread).
class DocumentScope {
 public:
  explicit DocumentScope(std::optional<DocumentLayout> layout);
  ~DocumentScope();
  DocumentScope(const DocumentScope&) = delete;
  DocumentScope& operator=(const DocumentScope&) = delete;

 private:
  std::optional<DocumentLayout> previous_;
};

// The layout in force on this thread, or null: rows are one sequence each.
const DocumentLayout* current_document_layout();

}  // namespace plait
