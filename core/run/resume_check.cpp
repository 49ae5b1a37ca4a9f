#include "run/resume_check.hpp"

#include <set>

#include <c10/util/ArrayRef.h>

#include "checkpoint/checkpoint_files.hpp"
#include "checkpoint/checkpoint_location.hpp"
#include "checkpoint/checkpoint_reader.hpp"
#include "checkpoint/state_parts.hpp"
#include "data/make_sampler.hpp"
#include "io/hf_weights.hpp"
#include "model/hf_config_check.hpp"
#include "plait/sdk/error.hpp"

namespace plait {
namespace fs = std::filesystem;
namespace {

// "[256, 64]", as c10 prints sizes.
std::string shape_text(const std::vector<int64_t>& shape) { return concat(c10::IntArrayRef(shape)); }

void check_files(const fs::path& folder, const checkpoint::CheckpointIndex& index) {
  for (const auto& [name, entry] : index.files) checkpoint::check_file_present(folder, name, entry);
}

void check_batch(const PreparedRun& prep, const fs::path& folder, const checkpoint::CheckpointIndex& index) {
  const nlohmann::json& saved = index.state.at("global_batch");
  const int64_t dp0 = saved.at("dp").get<int64_t>(), b0 = saved.at("micro_batch_size").get<int64_t>(),
                a0 = saved.at("grad_accum").get<int64_t>();
  const int64_t dp = prep.mesh.dp, b = prep.config->data().micro_batch_size,
                a = prep.config->train().grad_accum;
  if (dp0 * b0 * a0 == dp * b * a || prep.config->checkpoint().allow_batch_change) return;
  throw Error(concat("checkpoint ", folder.string(), " was trained with a global batch of ", dp0 * b0 * a0,
                     " sequences (dp ", dp0, " x micro_batch_size ", b0, " x grad_accum ", a0, "); this run's is ",
                     dp * b * a, " (dp ", dp, " x ", b, " x ", a, ")"),
              "keep dp x micro_batch_size x grad_accum, or pass --allow-batch-change "
              "(checkpoint.allow_batch_change = true) to resume with another global batch");
}

void check_data(const PreparedRun& prep, const fs::path& folder, const checkpoint::CheckpointIndex& index) {
  const nlohmann::json& data = index.state.at("data");
  const DataSettings& d = prep.config->data();
  const std::string order = d.source == "synthetic" ? "synthetic" : d.order;
  const auto seed = static_cast<uint64_t>(prep.config->train().seed);
  PLAIT_CHECK(data.at("order").get<std::string>() == order && data.at("seed").get<uint64_t>() == seed,
              concat("checkpoint ", folder.string(), " read its data in order '", data.at("order").get<std::string>(),
                     "' with seed ", data.at("seed").get<uint64_t>(), "; this run reads order '", order, "' with seed ", seed),
              "resume with the [data] source and order and the [train] seed of the run that saved it");
}

// An adapter's parameters (the trainable ones beside a frozen base) may be missing from
// an init_from source: a base model has none, and they start from their initial values.
bool may_miss(const ParamRef& p, bool adapter) { return adapter && p.tensor.requires_grad(); }

void check_hf_model(const HfWeights& weights, const StageModel& model, bool adapter) {
  for (const auto& p : model.all_parameters()) {
    if (may_miss(p, adapter) && !weights.has(p.name)) continue;
    PLAIT_CHECK(weights.has(p.name), concat(weights.folder().string(), " has no tensor ", p.name),
                "it holds another model: match [model] to its config.json");
    PLAIT_CHECK(weights.shape(p.name) == p.tensor.sizes().vec(),
                concat(weights.folder().string(), ": tensor ", p.name, " is ", shape_text(weights.shape(p.name)),
                       " there and ", shape_text(p.tensor.sizes().vec()), " in this model"),
                "match [model] to the folder's config.json");
  }
}

}  // namespace

void check_checkpoint_holds_model(const fs::path& folder, const checkpoint::CheckpointIndex& index, const StageModel& model,
                                  const std::string& hint, bool adapter) {
  std::set<std::string> names;
  for (const auto& p : model.all_parameters()) {
    names.insert(p.name);
    const std::string key = checkpoint::state_tensor_name(state_kind::param, p.name);
    const auto it = index.tensors.find(key);
    if (it == index.tensors.end() && may_miss(p, adapter)) continue;
    PLAIT_CHECK(it != index.tensors.end(), concat("checkpoint ", folder.string(), " has no parameter ", p.name),
                hint);
    PLAIT_CHECK(it->second.shape == p.tensor.sizes().vec(),
                concat("checkpoint ", folder.string(), ": parameter ", p.name, " is ", shape_text(it->second.shape),
                       " there and ", shape_text(p.tensor.sizes().vec()), " in this model"),
                hint);
  }
  const std::string prefix = concat(state_kind::param, "/");
  for (const auto& [key, entry] : index.tensors) {
    if (key.rfind(prefix, 0) != 0) continue;
    PLAIT_CHECK(names.count(key.substr(prefix.size())) > 0,
                concat("checkpoint ", folder.string(), " holds parameter ", key.substr(prefix.size()),
                       ", which this model does not have"),
                hint);
  }
}

void check_init_from(const PreparedRun& prep) {
  const Options& model = prep.config->table("model");
  const auto from = model.find<std::string>("init_from");
  if (!from) return;
  const bool adapter = prep.config->parallel().adapter != "none";
  at_place(model.where("init_from"), [&] {
    if (is_hf_folder(*from)) {
      check_hf_config(*from, prep.model);
      return check_hf_model(HfWeights(*from, prep.model.family), prep.pipeline.shapes, adapter);
    }
    const fs::path folder = checkpoint::resolve_checkpoint(*from);
    const checkpoint::CheckpointIndex index = checkpoint::read_index(folder);
    check_files(folder, index);
    check_checkpoint_holds_model(folder, index, prep.pipeline.shapes, kDamagedHint, adapter);
  });
}

namespace {

// What a damaged checkpoint fails: its index, its files, their checksums (every byte,
// before any rank starts; the ranks check again as they read).
checkpoint::CheckpointIndex sound_index(const fs::path& folder, bool named) {
  const checkpoint::CheckpointIndex index = checkpoint::read_index(folder);
  if (!named) checkpoint::check_name_is_step(folder);
  check_files(folder, index);
  checkpoint::CheckpointReader(folder).verify();
  return index;
}

std::string refusals(const std::vector<std::string>& refused) {
  std::string out;
  for (const auto& r : refused) out += (out.empty() ? "" : "; ") + r;
  return out;
}

}  // namespace

std::optional<ResumePoint> check_resume(const PreparedRun& prep, const std::string& run_folder) {
  const Options& c = prep.config->table("checkpoint");
  const std::string place = c.has("resume_from") ? c.where("resume_from") : c.where("resume");
  return at_place(place, [&]() -> std::optional<ResumePoint> {
    const auto choice = checkpoint::resume_choice(c, run_folder);
    if (!choice) return std::nullopt;
    ResumePoint point;
    checkpoint::CheckpointIndex index;
    for (const fs::path& folder : choice->newest_first) {
      try {
        index = sound_index(folder, choice->named);
        point.folder = folder;
        break;
      } catch (const std::exception& e) {
        if (choice->named) throw;
        point.refused.push_back(concat(folder.filename().string(), ": ", e.what()));
      }
    }
    PLAIT_CHECK(!point.folder.empty(),
                concat("no checkpoint in ", choice->root.string(), " can be resumed, each fails its checks: ",
                       refusals(point.refused)),
                "resume from another run's checkpoint, or start afresh with another --out");
    check_checkpoint_holds_model(point.folder, index, prep.pipeline.shapes);
    check_data(prep, point.folder, index);
    check_batch(prep, point.folder, index);
    const int64_t steps = prep.config->train().steps;
    PLAIT_CHECK(index.step < steps,
                concat("checkpoint ", point.folder.string(), " is at step ", index.step, " and train.steps is ", steps,
                       ": nothing is left to train"),
                "raise train.steps (--steps) past the checkpoint's step");
    point.step = index.step;
    return point;
  });
}

}  // namespace plait
