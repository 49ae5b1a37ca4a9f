#pragma once
// "This parameter's gradient is ready": a callback that runs right after autograd has
// accumulated a parameter's gradient into .grad, during backward. Strategies use it to
// start a gradient's communication while the rest of backward still runs (DDP buckets,
// ZeRO/FSDP reduce-scatter), as PyTorch's DDP reducer does with the same mechanism.
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

namespace plait {

class GradReadyHooks {
 public:
  // Runs `on_ready` every time backward has accumulated a gradient into `param.grad()`
  // (once per backward, after every use of the parameter has been summed).
  void add(const at::Tensor& param, std::function<void()> on_ready) {
    std::shared_ptr<torch::autograd::Node> accumulator = torch::autograd::impl::grad_accumulator(param);
    accumulator->add_post_hook(std::make_unique<PostHook>(std::move(on_ready)));
    accumulators_.push_back(std::move(accumulator));  // a variable holds its accumulator only weakly
  }

 private:
  struct PostHook final : torch::autograd::FunctionPostHook {
    explicit PostHook(std::function<void()> fn) : fn_(std::move(fn)) {}
    torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                              const torch::autograd::variable_list& /*inputs*/) override {
      fn_();
      return outputs;
    }
    std::function<void()> fn_;
  };

  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
};

}  // namespace plait
