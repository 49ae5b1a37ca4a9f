#include <cstdio>

#include "cli/commands.hpp"
#include "model/model_spec.hpp"

namespace plait::cli {

int models() {
  std::printf("%-6s %-5s %4s %4s %4s %6s %6s %6s %5s %16s  %s\n", "family", "size", "L", "H", "KV", "C", "F", "V", "T",
              "params", "dimensions of");
  for (const auto& s : named_sizes()) {
    const ModelSpec& m = s.spec;
    std::printf("%-6s %-5s %4lld %4lld %4lld %6lld %6lld %6lld %5lld %16lld  %s\n", m.family.c_str(), m.size.c_str(),
                static_cast<long long>(m.n_layer), static_cast<long long>(m.n_head),
                static_cast<long long>(m.n_kv_head), static_cast<long long>(m.n_embd),
                static_cast<long long>(m.ffn_hidden), static_cast<long long>(m.vocab_size),
                static_cast<long long>(m.block_size), static_cast<long long>(closed_form_params(m)),
                s.reference.c_str());
  }
  std::printf("L layers, H heads, KV key/value heads, C width, F MLP hidden, V vocabulary, T block size.\n"
              "params: trainable parameters (gpt2's lm_head is tied to wte and counted once).\n");
  return 0;
}

}  // namespace plait::cli
