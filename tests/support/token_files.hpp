#pragma once
// Data for tests: plait token files (docs/data-format.md), written from the format's table
// of offsets rather than from the reader's code, so that the two are checked against each
// other (fields can be set wrong on purpose), and sampler specs.
#include <cstdint>
#include <string>
#include <vector>

#include "data/sampler.hpp"
#include "support/test_support.hpp"

namespace plait::test {

struct PlaitTokens {
  std::vector<uint16_t> tokens;
  std::vector<uint8_t> mask;     // empty: no mask section
  std::vector<int64_t> starts;   // empty: no document starts
  uint32_t version = 1;
  uint32_t width = 2;
  int64_t claimed_tokens = -1;   // the header's count; -1: tokens.size()
  uint32_t vocab_size = 0;
  std::string tokenizer = "test";
};

fs::path write_plait_tokens(const fs::path& path, const PlaitTokens& file);

// Rank `rank` of `dp`, B rows of T tokens, seed 42, vocabulary 1000.
SamplerSpec sampler_spec(const std::string& order, int64_t B, int64_t T, int64_t dp = 1, int64_t rank = 0);

}  // namespace plait::test
