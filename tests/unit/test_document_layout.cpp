// Packed rows: each document in a row gets the logits, loss and gradients it would get
// alone (float64), for both families, both attention kernels and every checkpointing
// mode, because attention stays within the document and positions restart at its start.
#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include "model/dense_layers.hpp"
#include "data/document_runs.hpp"
#include "model/document_layout.hpp"
#include "model/model_zoo.hpp"
#include "train/activation_checkpoint.hpp"

using namespace plait;

namespace {

ModelSpec tiny(const std::string& family, const std::string& kernel) {
  for (const auto& s : named_sizes()) {
    if (s.spec.family == family && s.spec.size == "tiny") {
      ModelSpec spec = s.spec;
      spec.attention = kernel;
      return spec;
    }
  }
  FAIL("no tiny size");
  return {};
}

StageModel build(const ModelSpec& spec, const std::string& checkpointing) {
  auto factory = make_dense_layer_factory();
  StageModel m = build_model(spec, *factory, {7, at::TensorOptions().dtype(at::kDouble)});
  if (checkpointing != "none") apply_activation_checkpointing(m, checkpointing);
  return m;
}

const auto kLongs = at::TensorOptions().dtype(at::kLong);

// Three documents (their tokens, inputs are all but the last) and a padded row of 16.
struct PackedRowCase {
  std::vector<at::Tensor> documents;
  at::Tensor inputs, documents_of, positions;
  PackedRowCase() {
    at::manual_seed(3);
    int64_t at_position = 0;
    std::vector<at::Tensor> ins, docs, places;
    for (int64_t length : {5, 9, 4}) {  // 4 + 8 + 3 = 15 positions, then 1 of padding
      documents.push_back(at::randint(0, 256, {length}, kLongs));
      ins.push_back(documents.back().narrow(0, 0, length - 1));
      docs.push_back(at::full({length - 1}, static_cast<int64_t>(docs.size()), kLongs));
      places.push_back(at::arange(length - 1, kLongs));
      at_position += length - 1;
    }
    ins.push_back(at::zeros({16 - at_position}, kLongs));
    docs.push_back(at::full({16 - at_position}, 3, kLongs));
    places.push_back(at::arange(16 - at_position, kLongs));
    inputs = at::cat(ins).unsqueeze(0);
    documents_of = at::cat(docs).unsqueeze(0);
    positions = at::cat(places).unsqueeze(0);
  }
  // Targets of document d only (-1 elsewhere), in the row.
  at::Tensor targets_of(std::size_t d) const {
    at::Tensor t = at::full({1, 16}, -1, kLongs);
    int64_t from = 0;
    for (std::size_t i = 0; i < d; ++i) from += documents[i].size(0) - 1;
    const int64_t n = documents[d].size(0) - 1;
    t.narrow(1, from, n).copy_(documents[d].narrow(0, 1, n).unsqueeze(0));
    return t;
  }
};

at::Tensor loss_sum(const at::Tensor& logits, const at::Tensor& targets) {
  return at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}), {}, at::Reduction::Sum, -1);
}

std::vector<at::Tensor> grads_of(StageModel& m) {
  std::vector<at::Tensor> g;
  for (auto& p : m.parameters()) {
    g.push_back(p.tensor.grad().defined() ? p.tensor.grad().clone() : at::zeros_like(p.tensor));
    p.tensor.mutable_grad() = at::Tensor();
  }
  return g;
}

}  // namespace

TEST_CASE("each document of a packed row gets the logits, loss and gradients it gets alone", "[model][packing]") {
  const PackedRowCase row;
  for (const std::string family : {"gpt2", "llama"}) {
    for (const std::string kernel : {"sdpa", "math"}) {
      for (const std::string checkpointing : {"none", "full", "selective"}) {
        INFO(family << ", " << kernel << " attention, " << checkpointing << " checkpointing");
        StageModel m = build(tiny(family, kernel), checkpointing);
        at::Tensor packed_logits;
        {
          DocumentScope scope(DocumentLayout::of(row.documents_of, row.positions, at::kCPU));
          packed_logits = m.forward(row.inputs).detach();
        }
        int64_t from = 0;
        for (std::size_t d = 0; d < row.documents.size(); ++d) {
          INFO("document " << d);
          const at::Tensor& doc = row.documents[d];
          const int64_t n = doc.size(0) - 1;
          const at::Tensor alone_logits = m.forward(doc.narrow(0, 0, n).unsqueeze(0));
          CHECK(at::allclose(packed_logits.narrow(1, from, n), alone_logits.detach(), 1e-12, 1e-12));
          const at::Tensor alone = loss_sum(alone_logits, doc.narrow(0, 1, n).unsqueeze(0));
          alone.backward();
          const std::vector<at::Tensor> alone_grads = grads_of(m);
          at::Tensor packed;
          {
            DocumentScope scope(DocumentLayout::of(row.documents_of, row.positions, at::kCPU));
            packed = loss_sum(m.forward(row.inputs), row.targets_of(d));
          }
          packed.backward();  // outside the scope: checkpointing's recomputation must carry the layout itself
          const std::vector<at::Tensor> packed_grads = grads_of(m);
          CHECK(packed.item<double>() == Approx(alone.item<double>()).epsilon(1e-12));
          double worst = 0.0;
          for (std::size_t i = 0; i < alone_grads.size(); ++i) {
            worst = std::max(worst, (packed_grads[i] - alone_grads[i]).abs().max().item<double>());
          }
          CHECK(worst < 1e-12);
          from += n;
        }
      }
    }
  }
}

TEST_CASE("without the layout a packed row's documents see each other: the layout is what separates them",
          "[model][packing]") {
  const PackedRowCase row;
  StageModel m = build(tiny("llama", "sdpa"), "none");
  const at::Tensor unpacked = m.forward(row.inputs).detach();
  const at::Tensor alone = m.forward(row.documents[1].narrow(0, 0, 8).unsqueeze(0)).detach();
  CHECK_FALSE(at::allclose(unpacked.narrow(1, 4, 8), alone, 1e-6, 1e-6));
  // The first document starts the row: without a layout it is already alone.
  CHECK(at::allclose(unpacked.narrow(1, 0, 4), m.forward(row.documents[0].narrow(0, 0, 4).unsqueeze(0)), 1e-12, 1e-12));
}

TEST_CASE("packed rows as the variable-length attention kernel reads them: each document's offset row after row and "
          "the longest",
          "[model][packing]") {
  // Row 0: documents of 2, 3 and 1 positions; row 1: 1 and 5 (padding after the last
  // document is one of its own, as the sampler numbers it).
  const at::Tensor documents = at::tensor({0, 0, 1, 1, 1, 2, 0, 1, 1, 1, 1, 1}, at::kLong).view({2, 6});
  const DocumentRuns runs = document_runs(documents);
  CHECK(runs.starts.scalar_type() == at::kInt);
  const std::vector<int32_t> starts(runs.starts.data_ptr<int32_t>(), runs.starts.data_ptr<int32_t>() + runs.starts.numel());
  CHECK(starts == std::vector<int32_t>{0, 2, 5, 6, 7, 12});
  CHECK(runs.longest == 5);
  // A row that is one document, and a document that ends one row while the next row
  // starts with the same index: rows never share a document.
  const DocumentRuns whole = document_runs(at::zeros({2, 4}, at::kLong));
  CHECK(std::vector<int32_t>(whole.starts.data_ptr<int32_t>(), whole.starts.data_ptr<int32_t>() + 3) ==
        std::vector<int32_t>{0, 4, 8});
  CHECK(whole.longest == 4);
}

TEST_CASE("a layout makes its [B 1 T T] mask only when attention asks for it: the variable-length path never holds one",
          "[model][packing]") {
  const at::Tensor documents = at::tensor({0, 0, 1, 1, 0, 1, 1, 1}, at::kLong).view({2, 4});
  const DocumentLayout layout = DocumentLayout::of(documents, at::zeros({2, 4}, at::kLong), at::kCPU,
                                                   document_runs(documents).starts, 3);
  CHECK_FALSE(layout.allowed_.defined());
  const at::Tensor allowed = layout.allowed();
  REQUIRE(layout.allowed_.defined());
  CHECK(allowed.sizes() == at::IntArrayRef({2, 1, 4, 4}));
  // Row 0: documents {0,1} and {2,3}; each position sees its own document up to itself.
  const at::Tensor row0 = at::tensor({1, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 1, 1}, at::kInt).view({4, 4}).to(at::kBool);
  CHECK(at::equal(allowed[0][0], row0));
  CHECK(layout.allowed().is_same(allowed));  // made once
}
