#pragma once
// [model] init_from: a run that starts from given weights (fine-tuning) rather than from
// its seeded initialisation. The weights (a Hugging Face model folder, or a plait
// checkpoint's parameters) go into the parameters this rank built, each its own slice,
// before data parallelism takes the model, so every strategy starts from them. The
// launcher has checked every tensor's shape (run/resume_check.hpp).
#include <string>

#include "distributed/mesh.hpp"
#include "model/model_spec.hpp"
#include "plait/sdk/model.hpp"

namespace plait {

// Into every parameter of `model` that is not on the meta device.
// With `adapter`, the trainable parameters (the adapter's) the source lacks keep their initial values.
void load_initial_weights(const std::string& path, const ModelSpec& spec, const StageModel& model, const Mesh& mesh,
                          bool adapter = false);

}  // namespace plait
