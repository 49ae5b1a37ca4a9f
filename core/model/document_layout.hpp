#pragma once
// Packed rows (data/packing.hpp): a row holds several documents, and each must see only
// itself. The executor sets the microbatch's layout around each forward (as DropoutScope
// does its samples); the embedding takes positions from it (gpt2's learned positions,
// llama's rotary ones restart at each document) and the attention core its mask: a
// query attends to the keys of its own document at or before it, a block-diagonal causal
// mask through scaled_dot_product_attention. Without a layout the model is causal over
// the whole row, as before.
#include <optional>

#include <ATen/core/Tensor.h>

namespace plait {

struct DocumentLayout {
  at::Tensor positions;  // [B, T] int64: each position's place within its document
  at::Tensor allowed;    // [B, 1, T, T] bool: query t may attend key s

  // From the batch's [B, T] document index and positions (Batch::documents, ::positions),
  // moved to `device`.
  static DocumentLayout of(const at::Tensor& documents, const at::Tensor& positions, const at::Device& device);
};

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
