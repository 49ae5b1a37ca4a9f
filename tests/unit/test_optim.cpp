#include <catch2/catch.hpp>

#include <torch/optim/adamw.h>

#include "plait/sdk/optim.hpp"

using namespace plait;

TEST_CASE("adamw_update matches LibTorch's own AdamW step for step", "[train]") {
  for (const auto dtype : {at::kDouble, at::kFloat}) {
    INFO(c10::toString(dtype));
    at::manual_seed(0);
    at::Tensor mine = at::randn({5, 3}, dtype), theirs = mine.clone().set_requires_grad(true);
    AdamWConfig c{0.9, 0.95, 1e-8, 0.1};
    torch::optim::AdamW reference({theirs}, torch::optim::AdamWOptions(3e-3).betas({c.beta1, c.beta2}).eps(c.eps).weight_decay(c.weight_decay));
    AdamWState state = adamw_state_like(mine);
    for (int step = 1; step <= 6; ++step) {
      at::Tensor grad = at::randn({5, 3}, dtype);
      theirs.mutable_grad() = grad.clone();
      reference.step();
      adamw_update(mine, grad, state, step, 3e-3, c, /*decay=*/true);
    }
    const double tol = dtype == at::kDouble ? 1e-12 : 1e-6;
    CHECK(at::allclose(mine, theirs.detach(), tol, tol));
  }
}

TEST_CASE("weight decay applies only where decay is set", "[train]") {
  at::Tensor p = at::ones({4}, at::kDouble), q = p.clone();
  AdamWConfig c{0.9, 0.95, 1e-8, 0.5};
  AdamWState sp = adamw_state_like(p), sq = adamw_state_like(q);
  at::Tensor zero = at::zeros({4}, at::kDouble);
  adamw_update(p, zero, sp, 1, 0.1, c, true);
  adamw_update(q, zero, sq, 1, 0.1, c, false);
  CHECK(p.index({0}).item<double>() == Approx(1.0 - 0.1 * 0.5));  // zero gradient: only the decay moves it
  CHECK(q.index({0}).item<double>() == 1.0);
}

TEST_CASE("clipping follows torch.nn.utils.clip_grad_norm_", "[train]") {
  CHECK(clip_coefficient(10.0, 1.0) == Approx(1.0 / (10.0 + 1e-6)));
  CHECK(clip_coefficient(0.5, 1.0) == 1.0);
  CHECK(clip_coefficient(10.0, 0.0) == 1.0);  // off
  CHECK(squared_norm(at::full({4}, 2.0, at::kFloat)) == Approx(16.0));
}
