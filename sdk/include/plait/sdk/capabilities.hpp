#pragma once
// Capability words a plugin lists in its info struct. The core checks a chosen
// combination against them before any rank starts, so a missing capability is one
// sentence at launch instead of a hang at step 3. Unknown words are kept (for
// in-house conventions) but only these are checked by the core.
namespace plait::capability {

// data plugins
inline constexpr const char* grad_accum = "grad_accum";    // correct with train.grad_accum > 1
inline constexpr const char* bf16 = "bf16";                // bf16 compute, fp32 master weights
inline constexpr const char* float64 = "float64";          // float64 training
inline constexpr const char* multi_rank = "multi_rank";    // works with dp > 1
inline constexpr const char* pipeline = "pipeline";        // combines with a pipeline schedule
// combines with tensor parallel: split parameters' squared norms summed over tp
// (grad_norm.hpp), partial gradients summed over tp once per step (partial_grads.hpp)
inline constexpr const char* tensor = "tensor";
inline constexpr const char* offload = "offload";          // accepts an offload plugin
// saves and loads its state (DataParallel::state_parts / load_state, state.hpp)
inline constexpr const char* checkpoint = "checkpoint";
// (API 12.2) trains a different model than the single process by design (local steps,
// compressed gradients): `plait check` refuses it, and `plait verify` measures its loss
// gap and its traffic against ddp's instead of demanding equality.
inline constexpr const char* approximate = "approximate";
// (API 12.6) trains only the parameters StageModel::parameters() lists and leaves the
// frozen ones ([train] freeze) alone: no gradient, reduction, shard or optimizer state for
// them. The core keeps them, whole on every rank, and refuses to freeze any parameter
// under a data plugin without this word.
inline constexpr const char* frozen = "frozen";

// tensor plugins
// (API 12.8) its layer factory offers the AdapterHost extension (adapter.hpp): adapters
// placed inside its split products. The core refuses an adapter beside a tensor plugin
// without it. (An adapter plugin says `tensor` when it places itself by AdapterSite's
// split: the core refuses one without it beside a tensor plugin.)
inline constexpr const char* adapters = "adapters";

}  // namespace plait::capability
