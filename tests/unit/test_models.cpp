#include <catch2/catch.hpp>

#include <set>

#include "model/dense_layers.hpp"
#include "model/model_zoo.hpp"
#include "plait/sdk/init.hpp"

using namespace plait;

namespace {

ModelSpec tiny(const std::string& family) {
  for (const auto& s : named_sizes()) {
    if (s.spec.family == family && s.spec.size == "tiny") return s.spec;
  }
  FAIL("no tiny size");
  return {};
}

StageModel build(const ModelSpec& spec, uint64_t seed = 7, at::ScalarType dtype = at::kFloat) {
  auto factory = make_dense_layer_factory();
  return build_model(spec, *factory, {seed, at::TensorOptions().dtype(dtype)});
}

std::vector<std::string> names(const StageModel& m) {
  std::vector<std::string> out;
  for (const auto& p : m.parameters()) out.push_back(p.name);
  return out;
}

}  // namespace

TEST_CASE("gpt2 parameters carry nanoGPT's names and shapes", "[model]") {
  StageModel m = build(tiny("gpt2"));
  std::vector<std::string> expected = {"transformer.wte.weight", "transformer.wpe.weight"};
  for (int i = 0; i < 2; ++i) {
    const std::string h = "transformer.h." + std::to_string(i) + ".";
    for (const char* n : {"ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
                          "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
                          "mlp.c_proj.weight", "mlp.c_proj.bias"}) {
      expected.push_back(h + n);
    }
  }
  expected.push_back("transformer.ln_f.weight");
  expected.push_back("transformer.ln_f.bias");
  CHECK(names(m) == expected);  // lm_head.weight is wte's tensor, not a parameter of its own
  for (const auto& p : m.parameters()) {
    if (p.name == "transformer.h.0.attn.c_attn.weight") CHECK(p.tensor.sizes() == at::IntArrayRef({192, 64}));
    if (p.name == "transformer.h.0.mlp.c_fc.weight") CHECK(p.tensor.sizes() == at::IntArrayRef({256, 64}));
    CHECK(p.decay == (p.tensor.dim() >= 2));
  }
}

TEST_CASE("llama parameters carry Hugging Face's names", "[model]") {
  StageModel m = build(tiny("llama"));
  std::vector<std::string> expected = {"model.embed_tokens.weight"};
  for (int i = 0; i < 2; ++i) {
    const std::string l = "model.layers." + std::to_string(i) + ".";
    for (const char* n : {"input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.k_proj.weight",
                          "self_attn.v_proj.weight", "self_attn.o_proj.weight", "post_attention_layernorm.weight",
                          "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"}) {
      expected.push_back(l + n);
    }
  }
  expected.push_back("model.norm.weight");
  expected.push_back("lm_head.weight");
  CHECK(names(m) == expected);
  for (const auto& p : m.parameters()) {
    if (p.name == "model.layers.0.self_attn.k_proj.weight") CHECK(p.tensor.sizes() == at::IntArrayRef({32, 64}));
  }
}

TEST_CASE("both families map [B, T] tokens to [B, T, V] logits, causally", "[model]") {
  for (const std::string family : {"gpt2", "llama"}) {
    INFO(family);
    StageModel m = build(tiny(family));
    at::Tensor ids = at::randint(0, 256, {2, 16}, at::TensorOptions().dtype(at::kLong));
    at::Tensor logits = m.forward(ids);
    CHECK(logits.sizes() == at::IntArrayRef({2, 16, 256}));
    at::Tensor changed = ids.clone();
    changed.index_put_({0, 10}, (ids.index({0, 10}) + 1) % 256);
    at::Tensor again = m.forward(changed);
    // Positions before 10 cannot see token 10; position 10 and later do.
    CHECK(at::allclose(logits.narrow(1, 0, 10), again.narrow(1, 0, 10)));
    CHECK_FALSE(at::allclose(logits.narrow(1, 10, 6), again.narrow(1, 10, 6)));
  }
}

TEST_CASE("initial weights depend on seed and name only, in nanoGPT's distribution", "[model]") {
  StageModel a = build(tiny("gpt2"), 7), b = build(tiny("gpt2"), 7), c = build(tiny("gpt2"), 8);
  auto pa = a.parameters(), pb = b.parameters(), pc = c.parameters();
  for (std::size_t i = 0; i < pa.size(); ++i) CHECK(at::equal(pa[i].tensor, pb[i].tensor));
  CHECK_FALSE(at::equal(pa[0].tensor, pc[0].tensor));
  // Same seed, same name: the same draw however the rest of the model looks.
  at::Tensor direct = seeded_normal({256, 64}, 0.02, 7, "transformer.wte.weight", at::TensorOptions());
  CHECK(at::equal(pa[0].tensor, direct));
  for (const auto& p : pa) {
    if (p.name == "transformer.h.0.attn.c_attn.bias") CHECK(p.tensor.abs().max().item<double>() == 0.0);
    if (p.name == "transformer.h.0.ln_1.weight") CHECK(p.tensor.min().item<double>() == 1.0);
    if (p.name == "transformer.h.1.mlp.c_proj.weight") {
      CHECK(p.tensor.std().item<double>() == Approx(0.02 / std::sqrt(4.0)).epsilon(0.1));  // 0.02/sqrt(2*n_layer)
    }
  }
}

TEST_CASE("gpt2's tied head sends gradient to wte from both of its uses", "[model]") {
  StageModel m = build(tiny("gpt2"));
  at::Tensor ids = at::zeros({1, 4}, at::TensorOptions().dtype(at::kLong));  // only token 0 is looked up
  m.forward(ids).sum().backward();
  at::Tensor g = m.parameters()[0].tensor.grad();
  REQUIRE(g.defined());
  CHECK(g.index({0}).abs().sum().item<double>() > 0);   // the lookup
  CHECK(g.index({5}).abs().sum().item<double>() > 0);   // the head's use of a token never seen as input
}

TEST_CASE("models build in float64 and on the meta device", "[model]") {
  StageModel m = build(tiny("llama"), 1, at::kDouble);
  CHECK(m.parameters()[0].tensor.scalar_type() == at::kDouble);
  at::Tensor ids = at::randint(0, 256, {1, 8}, at::TensorOptions().dtype(at::kLong));
  CHECK(m.forward(ids).scalar_type() == at::kDouble);
  auto factory = make_dense_layer_factory();
  StageModel meta = build_model(tiny("gpt2"), *factory, {0, at::TensorOptions().device(at::kMeta)});
  CHECK(meta.parameters()[0].tensor.is_meta());
}
