// PowerSGD (Vogels et al., 2019): replicated data parallel whose gradient matrices are
// summed over the replicas as rank-r approximations, P Qᵀ, found by one step of power
// iteration warm-started from the last step's Q; what the approximation leaves out is
// kept by each replica and added to its next gradient (error feedback). Vectors, and
// matrices too small to gain, are summed exactly. Every replica applies the same
// gradient, so weights stay replicated, but not the single process's gradient: it
// claims `approximate`, and `plait verify` measures its loss gap and bytes against ddp.
#include <string>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>

#include "plait/sdk/sdk.hpp"
#include "plait_schema.hpp"

namespace {

struct Compressed {
  std::string name;
  at::Tensor param;  // its gradient is replaced by the approximation
  at::Tensor error;  // what earlier approximations left out, rows x cols
  at::Tensor q;      // cols x rank, warm start of the power iteration
};

class PowerSGD final : public plait::DataParallel {
 public:
  void setup(const plait::DataParallelSetup& setup) override {
    dp_ = setup.dp_group;
    optimizer_ = plait::ReplicatedAdamW({.params = setup.model->parameters(), .adamw = setup.adamw, .tp_group = setup.tp_group,
                                         .pp_group = setup.pp_group, .plugin = "powersgd"});
    // The same seed on every replica: P = M Q is summed, so Q must be the same everywhere.
    at::Generator seeded = at::detail::createCPUGenerator(20190601);
    for (const auto& p : optimizer_.params()) {
      const int64_t rows = p.tensor.dim() >= 2 ? p.tensor.size(0) : 0, cols = rows ? p.tensor.numel() / rows : 0;
      if (rows == 0 || (rows + cols) * rank_ >= rows * cols) {
        exact_.push_back(p.tensor);
        continue;
      }
      const at::Tensor q = at::randn({cols, rank_}, seeded, at::TensorOptions().dtype(p.tensor.scalar_type()));
      matrices_.push_back({p.name, p.tensor, at::zeros({rows, cols}, p.tensor.options()), q.to(p.tensor.device())});
    }
  }

  // Partial gradients are summed over tp first, so that every tp rank compresses the same matrix.
  void after_backward(const plait::MicrobatchInfo& mb) override {
    if (!mb.is_last()) return;
    optimizer_.sum_partial_grads();
    if (dp_ == nullptr) return;
    at::NoGradGuard no_grad;
    const bool exact = ++steps_ <= exact_steps_;
    std::vector<at::Tensor> sum_whole = grads_of(exact_);
    if (exact) {
      for (const auto& m : matrices_) {
        if (m.param.grad().defined()) sum_whole.push_back(m.param.grad());
      }
    }
    all_reduce_flat(sum_whole, "exact");
    if (!exact) compress();
  }

  plait::NamedTensors full_gradients() override { return optimizer_.named_grads(); }
  plait::NamedTensors full_parameters() override { return optimizer_.named_params(); }
  // AdamW's state, and per compressed matrix its error and Q.
  plait::StateBytes state_bytes() const override {
    int64_t kept = 0;
    for (const auto& m : matrices_) kept += static_cast<int64_t>(m.error.nbytes() + m.q.nbytes());
    return {.params = optimizer_.param_bytes(), .grads = optimizer_.param_bytes(), .optimizer = optimizer_.state_bytes() + kept};
  }

 protected:
  plait::GradNorm grad_norm() override { return optimizer_.grad_norm(); }
  void update(const plait::UpdateArgs& args) override { optimizer_.update(args); }
  void discard_gradients() override { optimizer_.discard(); }
  void on_configure() override {
    rank_ = options().get<int64_t>("rank");
    exact_steps_ = options().get<int64_t>("exact_steps");
  }

 private:
  // M = gradient + error; P = M Q, summed, orthonormalised; Q = Mᵀ P, summed; the sum of
  // the replicas' gradients is taken as P Qᵀ, and each keeps M - P Qᵀ / replicas.
  void compress() {
    std::vector<at::Tensor> ms, ps, qs;
    for (auto& m : matrices_) {
      PLAIT_CHECK(m.param.grad().defined(), plait::concat("powersgd: ", m.name, " has no gradient this step"),
                  "every replica must compress the same matrices; leave unused parameters out of the model");
      ms.push_back(m.param.grad().reshape(m.error.sizes()) + m.error);
      ps.push_back(ms.back().mm(m.q));
    }
    all_reduce_flat(ps, "p");
    for (std::size_t i = 0; i < matrices_.size(); ++i) {
      orthonormalise(ps[i]);
      qs.push_back(ms[i].t().mm(ps[i]));
    }
    all_reduce_flat(qs, "q");
    for (std::size_t i = 0; i < matrices_.size(); ++i) {
      const at::Tensor sum = ps[i].mm(qs[i].t());
      matrices_[i].error.copy_(ms[i] - sum / dp_->size());
      matrices_[i].param.mutable_grad().copy_(sum.view(matrices_[i].param.sizes()));
      matrices_[i].q.copy_(qs[i]);
    }
  }

  // Gram-Schmidt over the rank columns: no read back to the host, unlike a QR's checks.
  static void orthonormalise(at::Tensor& p) {
    for (int64_t i = 0; i < p.size(1); ++i) {
      at::Tensor col = p.narrow(1, i, 1);
      col.div_(at::linalg_vector_norm(col, 2) + 1e-8);
      if (i + 1 < p.size(1)) {
        at::Tensor rest = p.narrow(1, i + 1, p.size(1) - i - 1);
        rest.sub_(col * (col * rest).sum(0, true));
      }
    }
  }

  static std::vector<at::Tensor> grads_of(const std::vector<at::Tensor>& params) {
    std::vector<at::Tensor> out;
    for (const auto& p : params) {
      if (p.grad().defined()) out.push_back(p.grad());
    }
    return out;
  }

  // One all-reduce of the tensors flattened together, written back in place.
  void all_reduce_flat(std::vector<at::Tensor>& tensors, const char* phase) {
    if (tensors.empty()) return;
    std::vector<at::Tensor> flat_parts;
    for (const auto& t : tensors) flat_parts.push_back(t.reshape({-1}));
    at::Tensor flat = at::cat(flat_parts);
    plait::AllReduceOptions o;
    o.tag = {"powersgd", phase, "", -1};
    dp_->all_reduce(flat, o)->wait();
    int64_t offset = 0;
    for (auto& t : tensors) {
      t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
  }

  plait::Communicator* dp_ = nullptr;
  int64_t rank_ = 4, exact_steps_ = 0, steps_ = 0;
  plait::ReplicatedAdamW optimizer_;
  std::vector<at::Tensor> exact_;
  std::vector<Compressed> matrices_;
};

}  // namespace

PLAIT_PLUGIN(PowerSGD, "powersgd", "0.1.0", "grad_accum,float64,multi_rank,pipeline,tensor,approximate", plait_schema_toml,
             "PowerSGD: gradient matrices summed as rank-r approximations with error feedback; vectors summed exactly")
