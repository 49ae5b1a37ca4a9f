#pragma once
// Hugging Face transformers' form of plait's models (GPT2LMHeadModel, LlamaForCausalLM):
// the parameter names are the same (plait's reference names are theirs), GPT-2 stores its
// four Conv1D weights transposed ([in, out]), and config.json says the dimensions.
#include <string>

#include <nlohmann/json.hpp>

#include "model/model_spec.hpp"

namespace plait {

// Whether Hugging Face stores this parameter transposed from plait's [out, in].
bool hf_transposed(const std::string& family, const std::string& name);
nlohmann::ordered_json hf_config(const ModelSpec& spec, const std::string& torch_dtype);

// A model's dimensions in a checkpoint's index, and back.
nlohmann::ordered_json model_to_json(const ModelSpec& spec);
ModelSpec model_from_json(const nlohmann::json& j);

}  // namespace plait
