#include <catch2/catch.hpp>

#include "model/model_spec.hpp"
#include "model/model_zoo.hpp"
#include "plait/sdk/error.hpp"

using namespace plait;
using Catch::Matchers::Contains;

TEST_CASE("every named size's closed-form count equals the parameters its code builds", "[model]") {
  for (const auto& size : named_sizes()) {
    INFO(size.spec.family << " " << size.spec.size);
    CHECK(counted_params(size.spec) == closed_form_params(size.spec));
  }
}

TEST_CASE("sizes that follow a published model have its published parameter count", "[model]") {
  int checked = 0;
  for (const auto& size : named_sizes()) {
    if (!size.published_params) continue;
    INFO(size.spec.family << " " << size.spec.size << " (" << size.reference << ")");
    CHECK(closed_form_params(size.spec) == *size.published_params);
    ++checked;
  }
  CHECK(checked == 6);  // GPT-2 124M, TinyLlama, Llama-2 7B, 13B, 70B, Llama-3 8B
}

namespace {
Options model_table(std::map<std::string, OptionValue> values) {
  if (!values.count("family")) values["family"] = std::string("gpt2");
  if (!values.count("size")) values["size"] = std::string("tiny");
  if (!values.count("attention")) values["attention"] = std::string("sdpa");
  if (!values.count("dropout")) values["dropout"] = 0.0;
  return Options("model", values);
}
}  // namespace

TEST_CASE("[model] overrides replace single dimensions and are checked", "[model]") {
  ModelSpec s = resolve_model_spec(model_table({{"n_layer", int64_t{3}}, {"n_embd", int64_t{96}}}));
  CHECK(s.n_layer == 3);
  CHECK(s.n_embd == 96);
  CHECK(s.ffn_hidden == 4 * 96);  // gpt2's MLP follows the width
  CHECK_THROWS_WITH(resolve_model_spec(model_table({{"n_embd", int64_t{66}}})),
                    Contains("n_embd 66 is not a multiple of n_head 4"));
  CHECK_THROWS_WITH(resolve_model_spec(model_table({{"n_kv_head", int64_t{2}}})),
                    Contains("n_kv_head applies to the llama family only"));
  CHECK_THROWS_WITH(resolve_model_spec(model_table({{"family", std::string("llama")}, {"n_kv_head", int64_t{3}}})),
                    Contains("n_kv_head 3 does not divide n_head 4"));
  CHECK_THROWS_WITH(resolve_model_spec(model_table({{"family", std::string("llama")}, {"n_embd", int64_t{12}}})),
                    Contains("even head size for RoPE"));
  CHECK(resolve_model_spec(model_table({{"dropout", 0.1}})).dropout == 0.1);
  CHECK_THROWS_WITH(resolve_model_spec(model_table({{"dropout", 1.0}})),
                    Contains("[model] dropout is 1: every element would be dropped"));
}

TEST_CASE("FLOPs per token follow 6N + 12LHQT with lookup-only embeddings excluded", "[model]") {
  ModelSpec s = resolve_model_spec(model_table({}));
  // gpt2 tiny: N = all params - wpe (64 x 64); L=2, H=4, Q=16.
  const double n = static_cast<double>(closed_form_params(s) - 64 * 64);
  CHECK(flops_per_token(s, 32) == Approx(6.0 * n + 12.0 * 2 * 4 * 16 * 32));
  ModelSpec l = resolve_model_spec(model_table({{"family", std::string("llama")}}));
  CHECK(lookup_only_params(l) == l.vocab_size * l.n_embd);  // embed_tokens; the untied lm_head does count
}
