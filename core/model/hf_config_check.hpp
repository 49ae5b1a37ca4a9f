#pragma once
// A Hugging Face config.json held to the model a run builds. Shapes alone miss what
// changes the function without changing a tensor (the activation, the norm's epsilon,
// rope theta and scaling, biases, tied embeddings) and layers past the run's own (left
// behind without a word): each must agree, or the model fine-tuned is not the one named.
#include <filesystem>

#include "model/model_spec.hpp"

namespace plait {

void check_hf_config(const std::filesystem::path& folder, const ModelSpec& spec);

}  // namespace plait
