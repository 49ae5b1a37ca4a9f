#include <catch2/catch.hpp>

#include "loader/plugin_instance.hpp"
#include "model/dense_layers.hpp"
#include "model/model_zoo.hpp"
#include "plait/sdk/data_parallel.hpp"
#include "run/prepare.hpp"

using namespace plait;

namespace {

struct Fixture {
  PluginRegistry registry = discover_plugins();
  Options options{"single", {}};
  PluginInstance<DataParallel> instance = make_plugin<DataParallel>(registry, options, "single", {});
  DataParallel* dp = instance.plugin.get();
  ModelSpec spec{"gpt2", "tiny", 1, 2, 2, 16, 64, 32, 8, 10000.0, 1e-5};
  std::shared_ptr<LayerFactory> factory = make_dense_layer_factory();
  StageModel model = build_model(spec, *factory, {3, at::TensorOptions().dtype(at::kDouble)});
  AdamWConfig adamw{0.9, 0.95, 1e-8, 0.1};

  Fixture() { dp->setup({.model = &model, .adamw = adamw}); }

  void backward() {
    at::manual_seed(0);
    at::Tensor ids = at::randint(0, 32, {2, 8}, at::TensorOptions().dtype(at::kLong));
    model.forward(ids).pow(2).mean().backward();
  }
};

}  // namespace

TEST_CASE("single: one step is exactly clip-then-AdamW on every parameter", "[plugin.single]") {
  Fixture f;
  f.backward();
  auto params = f.model.parameters();
  std::vector<at::Tensor> before, grads;
  double sum_sq = 0.0;
  for (const auto& p : params) {
    before.push_back(p.tensor.detach().clone());
    grads.push_back(p.tensor.grad().clone());
    sum_sq += squared_norm(p.tensor.grad());
  }
  const double max_norm = 0.5 * std::sqrt(sum_sq);  // forces clipping
  const StepResult r = f.dp->step({.step = 1, .lr = 1e-2, .grad_clip = max_norm, .loss_figures = {}, .reader = nullptr});
  CHECK(r.grad_norm == Approx(std::sqrt(sum_sq)));
  const double coef = clip_coefficient(r.grad_norm, max_norm);
  for (std::size_t i = 0; i < params.size(); ++i) {
    INFO(params[i].name);
    at::Tensor expected = before[i].clone();
    AdamWState state = adamw_state_like(expected);
    adamw_update(expected, grads[i] * coef, state, 1, 1e-2, f.adamw, params[i].decay);
    CHECK(at::allclose(params[i].tensor.detach(), expected, 1e-12, 1e-14));
    CHECK_FALSE(params[i].tensor.grad().defined());  // gradients released, as zero_grad(set_to_none=True)
  }
}

TEST_CASE("single: full gradients and parameters come by reference name", "[plugin.single]") {
  Fixture f;
  f.backward();
  auto grads = f.dp->full_gradients();
  auto params = f.model.parameters();
  REQUIRE(grads.size() == params.size());
  for (std::size_t i = 0; i < grads.size(); ++i) {
    CHECK(grads[i].first == params[i].name);
    CHECK(at::equal(grads[i].second, params[i].tensor.grad()));
  }
  CHECK(f.dp->full_parameters()[0].first == "transformer.wte.weight");
}

TEST_CASE("single: state bytes are whole parameters, gradients and two AdamW moments", "[plugin.single]") {
  Fixture f;
  int64_t param_bytes = 0;
  for (const auto& p : f.model.parameters()) param_bytes += static_cast<int64_t>(p.tensor.nbytes());
  const StateBytes b = f.dp->state_bytes();
  CHECK(b.params == param_bytes);
  CHECK(b.grads == param_bytes);
  CHECK(b.optimizer == 2 * param_bytes);
  CHECK(b.host_params + b.host_grads + b.host_optimizer == 0);
}
