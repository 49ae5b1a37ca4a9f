// Replicated data parallel (PyTorch DDP's scheme). Every rank holds the whole model and
// optimizer. Gradients live in flat buckets (parameters in reverse order, about
// bucket_cap_mb each; each parameter's .grad is a view into its bucket). During the
// last microbatch's backward, a bucket's all-reduce starts as soon as autograd has
// accumulated every gradient in it, overlapping the rest of backward; earlier
// microbatches only accumulate. The loss is already normalised by the global token
// count, so the all-reduce sums. Then every rank takes the same optimizer step.
#include <vector>

#include "plait/sdk/sdk.hpp"
#include "plait_options.hpp"
#include "plait_schema.hpp"

namespace {

// Parameters (by index) in buckets of about `cap` bytes, in reverse order: roughly the
// order their gradients arrive. A cap of 0 gives each its own.
std::vector<std::vector<std::size_t>> bucket_indices(const std::vector<int64_t>& bytes, int64_t cap) {
  std::vector<std::vector<std::size_t>> groups(1);
  int64_t filled = 0;
  for (std::size_t k = bytes.size(); k-- > 0;) {
    if (!groups.back().empty() && filled + bytes[k] > cap) {
      groups.emplace_back();
      filled = 0;
    }
    groups.back().push_back(k);
    filled += bytes[k];
  }
  return groups;
}

struct Bucket {
  at::Tensor flat;
  std::vector<std::size_t> params;  // indices into params_
  std::size_t ready = 0;
  std::shared_ptr<plait::Work> work;
};

class Ddp final : public plait::DataParallel, public plait::DataCostModel {
 public:
  // Whole parameters, gradients (the buckets) and AdamW moments in the parameters' dtype;
  // each bucket all-reduced once per step, during the last backward when overlap is on.
  plait::DataCost cost(const plait::CostQuery& q) const override {
    plait::DataCost c{.state = plait::replicated_state(q)};
    std::vector<int64_t> bytes;
    for (const auto& p : *q.params) bytes.push_back(p.elements * q.param_bytes);
    if (q.dp > 1) {
      for (const auto& group : bucket_indices(bytes, cap_bytes())) {
        int64_t sum = 0;
        for (std::size_t k : group) sum += bytes[k];
        c.comm.push_back({"gradient bucket", plait::CostCollective::all_reduce, sum, 1,
                          settings().overlap ? plait::CostOverlap::backward : plait::CostOverlap::none, 0});
      }
    }
    return c;
  }
  void* find_extension(std::string_view id) override { return plait::offer<plait::DataCostModel>(this, id); }

  void setup(const plait::DataParallelSetup& setup) override {
    comm_ = setup.dp_group;
    overlap_ = settings().overlap;
    optimizer_ = plait::ReplicatedAdamW({.params = setup.model->parameters(),
                                         .adamw = setup.adamw,
                                         .tp_group = setup.tp_group,
                                         .pp_group = setup.pp_group,
                                         .plugin = "ddp",
                                         .release_grads = false});  // .grad are views of the buckets
    const auto& params = optimizer_.params();
    // None on a pipeline rank whose every parameter is frozen ([train] freeze): no buckets.
    if (!params.empty()) make_buckets(params);
    if (comm_ != nullptr && settings().broadcast_init) broadcast_parameters(params);
    for (std::size_t i = 0; i < params.size(); ++i) {
      hooks_.add(params[i].tensor, [this, i] { on_grad_ready(i); });
    }
    log().info("ddp: ", buckets_.size(), " buckets over ", params.size(), " parameters, ", comm_ ? comm_->size() : 1,
               " ranks, overlap ", overlap_ ? "on" : "off");
  }

  void before_microbatch(const plait::MicrobatchInfo& mb) override {
    microbatch_ = mb;
    sync_ = comm_ != nullptr && mb.is_last();
    for (auto& b : buckets_) b.ready = 0;
  }

  void after_backward(const plait::MicrobatchInfo& mb) override {
    if (sync_) {
      for (std::size_t b = 0; b < buckets_.size(); ++b) {
        if (!buckets_[b].work) launch(b);  // hooks off, or parameters this backward did not reach
      }
      for (auto& b : buckets_) {
        b.work->wait();
        b.work.reset();
      }
    }
    if (mb.is_last()) optimizer_.sum_partial_grads();
  }

  plait::NamedTensors full_gradients() override { return optimizer_.named_grads(); }
  plait::NamedTensors full_parameters() override { return optimizer_.named_params(); }
  // Every rank holds the same state: each writes 1/dp of it.
  std::vector<plait::StatePart> state_parts() override {
    return comm_ ? optimizer_.state_parts(comm_->size(), comm_->rank()) : optimizer_.state_parts();
  }
  void load_state(plait::StateSource& source) override { optimizer_.load_state(source); }

  plait::StateBytes state_bytes() const override {
    plait::StateBytes bytes;
    bytes.params = optimizer_.param_bytes();
    for (const auto& b : buckets_) bytes.grads += static_cast<int64_t>(b.flat.nbytes());
    bytes.optimizer = optimizer_.state_bytes();
    return bytes;
  }

 protected:
  // Gradients are identical on every dp rank now: only tensor-parallel slices are summed.
  plait::GradNorm grad_norm() override { return optimizer_.grad_norm(); }
  void update(const plait::UpdateArgs& args) override {
    optimizer_.update(args);
    discard_gradients();
  }
  void discard_gradients() override {
    for (auto& b : buckets_) b.flat.zero_();
  }

 private:
  // This plugin's [ddp] table, typed (plait_options.hpp, generated from schema.toml).
  plait_options::Options settings() const { return plait_options::Options::from(options()); }
  int64_t cap_bytes() const { return static_cast<int64_t>(settings().bucket_cap_mb * 1024 * 1024); }

  void make_buckets(const std::vector<plait::ParamRef>& params) {
    const at::ScalarType dtype = params.front().tensor.scalar_type();
    std::vector<int64_t> bytes;
    for (const auto& p : params) {
      PLAIT_CHECK(p.tensor.scalar_type() == dtype,
                  plait::concat("ddp: parameter ", p.name, " is ", p.tensor.scalar_type(), " but others are ", dtype),
                  "keep every parameter in one dtype");
      bytes.push_back(static_cast<int64_t>(p.tensor.nbytes()));
    }
    const std::vector<std::vector<std::size_t>> groups = bucket_indices(bytes, cap_bytes());
    bucket_of_.assign(params.size(), 0);
    for (const auto& group : groups) {
      Bucket b;
      int64_t numel = 0;
      for (std::size_t k : group) numel += params[k].tensor.numel();
      b.flat = at::zeros({numel}, params.front().tensor.options().requires_grad(false));
      int64_t offset = 0;
      for (std::size_t k : group) {
        const at::Tensor& p = params[k].tensor;
        at::Tensor view = b.flat.narrow(0, offset, p.numel()).view(p.sizes());
        const_cast<at::Tensor&>(p).mutable_grad() = view;  // autograd accumulates into the bucket
        offset += p.numel();
        bucket_of_[k] = buckets_.size();
      }
      b.params = group;
      buckets_.push_back(std::move(b));
    }
  }

  void broadcast_parameters(const std::vector<plait::ParamRef>& params) {
    at::NoGradGuard no_grad;
    for (const auto& b : buckets_) {
      std::vector<at::Tensor> pieces;
      for (std::size_t k : b.params) pieces.push_back(params[k].tensor.detach().reshape({-1}));
      at::Tensor flat = at::cat(pieces);
      plait::BroadcastOptions o;
      o.root = 0;
      o.tag = {"ddp", "broadcast-init", "", -1};
      comm_->broadcast(flat, o)->wait();
      int64_t offset = 0;
      for (std::size_t k : b.params) {
        at::Tensor p = params[k].tensor.detach();
        p.copy_(flat.narrow(0, offset, p.numel()).view(p.sizes()));
        offset += p.numel();
      }
    }
  }

  void on_grad_ready(std::size_t param) {
    if (!sync_ || !overlap_) return;
    Bucket& b = buckets_[bucket_of_[param]];
    if (++b.ready == b.params.size()) launch(bucket_of_[param]);
  }

  void launch(std::size_t index) {
    plait::AllReduceOptions o;
    o.op = plait::ReduceOp::sum;
    o.tag = {"ddp", "grad-sync", plait::concat("bucket ", index), microbatch_.index};
    buckets_[index].work = comm_->all_reduce(buckets_[index].flat, o);
  }

  plait::Communicator* comm_ = nullptr;
  bool overlap_ = true;
  bool sync_ = false;
  plait::MicrobatchInfo microbatch_;
  plait::ReplicatedAdamW optimizer_;
  std::vector<Bucket> buckets_;
  std::vector<std::size_t> bucket_of_;
  plait::GradReadyHooks hooks_;
};

}  // namespace

PLAIT_PLUGIN(Ddp, "ddp", "1.0.0", "grad_accum,bf16,float64,multi_rank,pipeline,tensor,checkpoint,frozen", plait_schema_toml,
             "replicated data parallel: bucketed gradient all-reduce overlapped with backward")
