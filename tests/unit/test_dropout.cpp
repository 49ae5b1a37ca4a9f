// Residual-stream dropout: its mask is a function of (seed, site, global sample, global
// position, feature) only, so parts of a batch (data parallel rows, sequence-parallel
// positions) drop exactly what the whole batch drops; it drops p of the elements, scales
// the rest, and refuses to run where no sample ids are known.
#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include "model/dense_layers.hpp"
#include "memory/tracking_allocator.hpp"
#include "model/dropout.hpp"
#include "model/model_zoo.hpp"
#include "plait/sdk/error.hpp"

using namespace plait;
using Catch::Matchers::Contains;

namespace {

at::Tensor keep(const at::Tensor& x, const std::string& site, double p, DropoutStream stream, SequencePart part = {}) {
  return dropout_keep_mask(x, site, p, stream, part);
}

double agreement(const at::Tensor& a, const at::Tensor& b) { return a.eq(b).to(at::kDouble).mean().item<double>(); }

}  // namespace

TEST_CASE("dropout drops p of the elements and scales the rest by 1/(1-p)", "[dropout]") {
  const at::Tensor x = at::ones({8, 64, 256}, at::kDouble);
  for (double p : {0.1, 0.5}) {
    INFO("p " << p);
    DropoutScope scope(DropoutStream{3, 40});
    const at::Tensor y = SiteDropout("transformer.h.0.mlp.dropout", p, {})(x);
    const double dropped = y.eq(0).to(at::kDouble).mean().item<double>();
    CHECK(dropped == Approx(p).margin(0.01));
    CHECK(at::allclose(y.masked_select(y.ne(0)), at::full({1}, 1.0 / (1.0 - p), at::kDouble)));
  }
}

TEST_CASE("a dropout mask depends on seed, site, sample, position and feature, not on who computes it",
          "[dropout]") {
  const at::Tensor x = at::zeros({4, 16, 32});
  const DropoutStream stream{11, 100};
  const at::Tensor whole = keep(x, "s", 0.5, stream);
  CHECK(at::equal(whole, keep(x, "s", 0.5, stream)));

  // Sequence-parallel parts: each rank's positions give its slice of the whole mask.
  std::vector<at::Tensor> parts;
  for (int64_t i = 0; i < 4; ++i) parts.push_back(keep(at::zeros({4, 4, 32}), "s", 0.5, stream, {i, 4}));
  CHECK(at::equal(at::cat(parts, 1), whole));

  // Data-parallel rows: rows 2 and 3 of the batch are samples 102 and 103 wherever they run.
  CHECK(at::equal(keep(at::zeros({2, 16, 32}), "s", 0.5, {11, 102}), whole.narrow(0, 2, 2)));

  // Another seed, site or sample draws an unrelated mask (half the elements agree at p 0.5),
  // and neighbouring positions and features are unrelated too.
  CHECK(agreement(keep(x, "s", 0.5, {12, 100}), whole) == Approx(0.5).margin(0.05));
  CHECK(agreement(keep(x, "t", 0.5, stream), whole) == Approx(0.5).margin(0.05));
  CHECK(agreement(keep(x, "s", 0.5, {11, 104}), whole) == Approx(0.5).margin(0.05));
  CHECK(agreement(whole.narrow(1, 0, 15), whole.narrow(1, 1, 15)) == Approx(0.5).margin(0.05));
  CHECK(agreement(whole.narrow(2, 0, 31), whole.narrow(2, 1, 31)) == Approx(0.5).margin(0.05));
  CHECK(agreement(whole.narrow(0, 0, 3), whole.narrow(0, 1, 3)) == Approx(0.5).margin(0.05));
  // Where two rows differ is not the same for neighbouring features: a row's hash and a
  // feature's hash combined by xor alone would make it so.
  const at::Tensor rows = whole.reshape({-1, 32});
  const at::Tensor differ = rows.narrow(0, 0, 63).ne(rows.narrow(0, 1, 63));
  CHECK(agreement(differ.narrow(1, 0, 31), differ.narrow(1, 1, 31)) == Approx(0.5).margin(0.05));
}

TEST_CASE("a dropout mask needs at most 13 bytes per element while it is made, no int64 of the activation's size",
          "[dropout]") {
  install_tracking_allocator();
  const at::Tensor x = at::zeros({4, 64, 1024}, at::kFloat);
  reset_cpu_memory_peak();
  const int64_t before = cpu_memory_stats().current_bytes;
  const at::Tensor mask = keep(x, "s", 0.1, {1, 0});
  const int64_t made = cpu_memory_stats().peak_bytes - before;
  INFO("peak while making the mask: " << made << " bytes for " << x.numel() << " elements");
  CHECK(made <= 13 * x.numel());  // three int32 buffers and the bool mask
  CHECK(mask.scalar_type() == at::kBool);
}

TEST_CASE("dropout's gradient is its mask scaled", "[dropout]") {
  const at::Tensor x = at::randn({2, 8, 16}, at::kDouble).requires_grad_(true);
  DropoutScope scope(DropoutStream{5, 0});
  SiteDropout("d", 0.25, {})(x).sum().backward();
  const at::Tensor expected = keep(x, "d", 0.25, {5, 0}).to(at::kDouble) / 0.75;
  CHECK(at::allclose(x.grad(), expected));
}

TEST_CASE("dropout refuses to run without sample ids, and a probability of 1", "[dropout]") {
  const at::Tensor x = at::ones({1, 2, 4});
  CHECK(at::equal(SiteDropout("off", 0.0, {})(x), x));  // p = 0 needs no stream
  CHECK_THROWS_WITH(SiteDropout("transformer.drop", 0.1, {})(x),
                    Contains("dropout at 'transformer.drop' ran outside a training step's forward"));
  CHECK_THROWS_WITH(SiteDropout("transformer.drop", 1.0, {}), Contains("has probability 1"));
}

TEST_CASE("the models drop on the residual stream, keyed on the samples", "[dropout]") {
  for (const std::string family : {"gpt2", "llama"}) {
    INFO(family);
    ModelSpec spec;
    for (const auto& s : named_sizes()) {
      if (s.spec.family == family && s.spec.size == "tiny") spec = s.spec;
    }
    auto factory = make_dense_layer_factory();
    const InitSpec init{7, at::TensorOptions().dtype(at::kDouble)};
    StageModel plain = build_model(spec, *factory, init);
    spec.dropout = 0.2;
    StageModel dropping = build_model(spec, *factory, init);
    const at::Tensor ids = at::randint(spec.vocab_size, {2, 16}, at::kLong);
    auto run = [&](StageModel& m, int64_t first_sample) {
      at::NoGradGuard no_grad;
      DropoutScope scope(DropoutStream{7, first_sample});
      at::Tensor h = ids;
      for (auto& slot : m.units) h = slot.unit->forward(h);
      return h;
    };
    CHECK_FALSE(at::allclose(run(dropping, 0), run(plain, 0)));
    CHECK(at::equal(run(dropping, 0), run(dropping, 0)));
    CHECK_FALSE(at::allclose(run(dropping, 0), run(dropping, 2)));
  }
}
