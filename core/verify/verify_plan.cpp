#include "verify/verify_plan.hpp"

#include <algorithm>

#include "equivalence/tolerance.hpp"
#include "plait/sdk/capabilities.hpp"
#include "plait/sdk/error.hpp"

namespace plait::verify {
namespace {

using Sets = std::vector<std::string>;

Sets operator+(Sets a, const Sets& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Equivalence cases of a kind, by title: overrides on top of choosing the plugin.
using Titled = std::vector<std::pair<std::string, Sets>>;

const Sets kLlama32 = {"model.family=llama", "train.dtype=float32", "model.dropout=0.1"};

// bfloat16 has no default tolerance in plait check: verify's own (tolerance.hpp).
// Half the quickstart's parameters: what `frozen` promises to leave alone.
const char* const kFreezeSome = R"(train.freeze=["transformer.w?e.weight", "transformer.h.0.*"])";

std::string bf16_title(const std::string& ranks) {
  return concat(ranks, ", llama, bfloat16 with fp32 master weights (tolerance ", kBfloat16VerifyTolerance, ")");
}

// A data plugin: dp 2 (or one process, without multi_rank), then composed with a
// pipeline, tensor parallel and offload where it claims them.
Titled data_cases(const PluginRecord& p, bool quick) {
  Titled out;
  const bool multi = p.has_capability(capability::multi_rank);
  const Sets dp2 = multi ? Sets{"parallel.dp=2"} : Sets{};
  const std::string ranks = multi ? "dp 2" : "one process";
  out.push_back({ranks + ", gpt2, float64, accumulation 2, clipping", dp2});
  out.push_back({ranks + ", llama, float32, dropout", dp2 + kLlama32});
  if (quick) return out;
  if (multi) out.push_back({"dp 4, gpt2, float64", {"parallel.dp=4", "data.micro_batch_size=2"}});
  if (p.has_capability(capability::pipeline)) out.push_back({ranks + " x pp 2 (1f1b), gpt2, float64", dp2 + Sets{"parallel.pipeline=1f1b", "parallel.pp=2"}});
  if (p.has_capability(capability::tensor)) {
    out.push_back({ranks + " x tp 2 (megatron), llama, float64", dp2 + Sets{"parallel.tensor=megatron", "parallel.tp=2", "model.family=llama"}});
  }
  if (p.has_capability(capability::offload)) out.push_back({ranks + " with cpu offload, gpt2, float64", dp2 + Sets{"parallel.offload=cpu"}});
  if (p.has_capability(capability::bf16)) out.push_back({bf16_title(ranks), dp2 + Sets{"model.family=llama", "train.dtype=bfloat16"}});
  if (p.has_capability(capability::frozen)) {
    out.push_back({ranks + " with the embeddings and block 0 frozen, gpt2, float64", dp2 + Sets{kFreezeSome}});
  }
  return out;
}

Titled pipeline_cases(bool quick) {
  Titled out;
  const Sets pp2 = {"parallel.pp=2", "train.grad_accum=4"};
  out.push_back({"pp 2, 4 microbatches, gpt2, float64", pp2});
  out.push_back({"pp 2, 4 microbatches, llama, float32, dropout", pp2 + kLlama32});
  if (quick) return out;
  out.push_back({"pp 4, 4 microbatches, gpt2, float64", {"parallel.pp=4", "train.grad_accum=4", "model.n_layer=8"}});
  out.push_back({"dp 2 x pp 2 with ddp, under NCCL's point-to-point order, float64",
      pp2 + Sets{"parallel.data=ddp", "parallel.dp=2", "gloo.p2p=nccl"}});
  return out;
}

Titled tensor_cases(bool quick) {
  Titled out;
  out.push_back({"tp 2, gpt2, float64", {"parallel.tp=2"}});
  out.push_back({"tp 2, llama, float32, dropout", Sets{"parallel.tp=2"} + kLlama32});
  if (quick) return out;
  out.push_back({"tp 4, gpt2, float64", {"parallel.tp=4"}});
  out.push_back({"tp 4, llama (4 key/value heads), float64", {"parallel.tp=4", "model.family=llama", "model.n_kv_head=4"}});
  out.push_back({"dp 2 x tp 2 with zero stage 3, llama, float64",
      {"parallel.tp=2", "parallel.dp=2", "parallel.data=zero", "zero.stage=3", "model.family=llama"}});
  return out;
}

Titled offload_cases(bool quick) {
  Titled out;
  out.push_back({"zero stage 2 on dp 2, gpt2, float64", {"parallel.data=zero", "zero.stage=2", "parallel.dp=2"}});
  if (quick) return out;
  out.push_back({"zero stage 1 on dp 2, llama, float32, dropout", Sets{"parallel.data=zero", "zero.stage=1", "parallel.dp=2"} + kLlama32});
  out.push_back({"fsdp on dp 2, gpt2, float64", {"parallel.data=fsdp", "parallel.dp=2"}});
  return out;
}

Titled comm_cases(bool quick) {
  Titled out;
  out.push_back({"ddp on dp 2, gpt2, float64", {"parallel.data=ddp", "parallel.dp=2"}});
  out.push_back({"zero stage 3 on dp 2, llama, float32, dropout", Sets{"parallel.data=zero", "zero.stage=3", "parallel.dp=2"} + kLlama32});
  if (quick) return out;
  out.push_back({"1f1b on pp 2, gpt2, float64", {"parallel.pipeline=1f1b", "parallel.pp=2"}});
  out.push_back({"megatron on tp 2, gpt2, float64", {"parallel.tensor=megatron", "parallel.tp=2"}});
  return out;
}

// An adapter with its default options (which must adapt something of both families)
// under the data plugins and a schedule: the adapters train as in the single process.
Titled adapter_cases(bool quick) {
  Titled out;
  out.push_back({"ddp on dp 2, gpt2, float64", {"parallel.data=ddp", "parallel.dp=2"}});
  out.push_back({"zero stage 3 on dp 2, llama, float32, dropout", Sets{"parallel.data=zero", "zero.stage=3", "parallel.dp=2"} + kLlama32});
  if (quick) return out;
  out.push_back({"fsdp on dp 2, gpt2, float64", {"parallel.data=fsdp", "parallel.dp=2"}});
  out.push_back({"1f1b on pp 2, 4 microbatches, gpt2, float64", {"parallel.pipeline=1f1b", "parallel.pp=2", "train.grad_accum=4"}});
  return out;
}

// Resumed exactly, and (full) resharded to and from the single process. An approximate
// plugin's state changes over more steps (local rounds, error feedback): its resume
// runs 24 steps, so that a checkpoint falls inside a round after earlier ones.
std::vector<Case> checkpoint_cases(const PluginRecord& p, const Sets& me, bool quick) {
  const Sets dp2 = p.has_capability(capability::multi_rank) ? Sets{"parallel.dp=2"} : Sets{};
  const bool approximate = p.has_capability(capability::approximate);
  const int steps = approximate ? 24 : 4;
  std::vector<Case> out;
  out.push_back({"checkpoint", concat("resumes exactly: ", steps, " steps, and ", steps / 2,
                                      " more from its step-", steps / 2, " checkpoint, end bit for bit alike (dropout on)"),
                 CaseKind::resume, me + dp2 + Sets{"model.dropout=0.1"}, {}, "", steps});
  if (quick) return out;
  // The single process with the same global batch: dp x 4 rows per microbatch.
  const Sets single = {"parallel.data=single", "parallel.dp=1", dp2.empty() ? "data.micro_batch_size=4" : "data.micro_batch_size=8"};
  out.push_back({"checkpoint", "a checkpoint it saved resumes under the single process", CaseKind::reshard, me + dp2, single, ""});
  out.push_back({"checkpoint", "a checkpoint of the single process resumes under it", CaseKind::reshard, single, me + dp2, ""});
  for (auto& c : out) c.approximate = approximate;
  return out;
}

// Each capability a data plugin does not claim is refused before launch, naming it.
std::vector<Case> refusal_cases(const PluginRecord& p, const Sets& me) {
  const std::vector<std::pair<const char*, Sets>> triggers = {
      {capability::grad_accum, {"train.grad_accum=2"}},
      {capability::bf16, {"train.dtype=bfloat16"}},
      {capability::float64, {"train.dtype=float64"}},
      {capability::multi_rank, {"parallel.dp=2"}},
      {capability::pipeline, {"parallel.pipeline=1f1b", "parallel.pp=2"}},
      {capability::tensor, {"parallel.tensor=megatron", "parallel.tp=2"}},
      {capability::offload, {"parallel.offload=cpu"}},
      {capability::checkpoint, {"checkpoint.every=2"}},
      {capability::frozen, {kFreezeSome}},
  };
  // The base config's accumulation and float64 stay unless they are refused themselves.
  Sets base = me;
  if (!p.has_capability(capability::grad_accum)) base.push_back("train.grad_accum=1");
  if (!p.has_capability(capability::float64)) base.push_back("train.dtype=float32");
  std::vector<Case> out;
  for (const auto& [word, sets] : triggers) {
    if (p.has_capability(word)) continue;
    out.push_back({"capabilities", concat("without '", word, "': refused before launch"), CaseKind::refused, base + sets,
                   {}, concat("data plugin '", p.name, "' cannot be combined with")});
  }
  return out;
}

}  // namespace

Sets with_ddp(const Sets& sets, const std::string& plugin) {
  Sets out;
  for (const auto& s : sets) {
    if (!s.starts_with(plugin + ".") && !s.starts_with("parallel.data=")) out.push_back(s);
  }
  out.push_back("parallel.data=ddp");
  return out;
}

std::string base_config_toml() {
  return R"(# plait verify's base: each case adds its overrides (--set) to this.
[model]
family = "gpt2"
size = "tiny"
n_layer = 4

[data]
source = "synthetic"
micro_batch_size = 4
seq_len = 32

[train]
steps = 4
lr = 3e-3
warmup_steps = 1
grad_clip = 0.5
grad_accum = 2
dtype = "float64"
seed = 1337
)";
}

std::vector<Case> plan_cases(const PluginRecord& plugin, bool quick, const Sets& sets) {
  const Sets me = Sets{"parallel." + plugin.kind + "=" + plugin.name} + sets;
  Titled equivalence;
  if (plugin.kind == "data") equivalence = data_cases(plugin, quick);
  if (plugin.kind == "pipeline") equivalence = pipeline_cases(quick);
  if (plugin.kind == "tensor") equivalence = tensor_cases(quick);
  if (plugin.kind == "offload") equivalence = offload_cases(quick);
  if (plugin.kind == "comm") equivalence = comm_cases(quick);
  if (plugin.kind == "adapter") equivalence = adapter_cases(quick);
  // An approximate plugin is not the single process by design: each case compares it with ddp.
  const bool approximate = plugin.has_capability(capability::approximate);
  std::vector<Case> out;
  for (auto& [title, sets] : equivalence) {
    if (approximate) {
      out.push_back({"approximation", concat(title, ", ", kLossGapSteps, " steps against ddp"), CaseKind::loss_gap, me + sets,
                     with_ddp(me + sets, plugin.name), ""});
    } else {
      out.push_back({"equivalence", title, CaseKind::equivalence, me + sets, {}, ""});
      if (std::find(sets.begin(), sets.end(), "train.dtype=bfloat16") != sets.end()) out.back().tolerance = kBfloat16VerifyTolerance;
    }
  }
  if (!equivalence.empty()) {  // on its first equivalence case's mesh
    const Sets first = me + equivalence.front().second;
    out.push_back({"honesty", "one device-to-host read per step, every wait counted", CaseKind::host_reads, first, {}, ""});
    out.push_back({"honesty", "the state bytes it reports are what each rank's allocator holds", CaseKind::state_bytes, first, {}, ""});
    out.push_back({"honesty", "its traffic is what the core counted: nothing on the wire outside its operations", CaseKind::traffic, first, {}, ""});
  }
  if (plugin.kind != "data") return out;
  if (plugin.has_capability(capability::checkpoint)) {
    for (auto& c : checkpoint_cases(plugin, me, quick)) out.push_back(std::move(c));
  }
  for (auto& c : refusal_cases(plugin, me)) out.push_back(std::move(c));
  return out;
}

}  // namespace plait::verify
