#include "support/token_files.hpp"

#include <cstring>
#include <fstream>

namespace plait::test {
namespace {

template <class T>
void put(std::vector<char>& bytes, std::size_t at, T value) {
  std::memcpy(bytes.data() + at, &value, sizeof(T));
}

void pad_to_8(std::vector<char>& bytes) { bytes.resize((bytes.size() + 7) / 8 * 8, 0); }

}  // namespace

fs::path write_plait_tokens(const fs::path& path, const PlaitTokens& f) {
  std::vector<char> bytes(1024, 0);
  std::memcpy(bytes.data(), "PLAITTOK", 8);
  put<uint32_t>(bytes, 8, f.version);
  put<uint32_t>(bytes, 12, f.width);
  put<int64_t>(bytes, 16, f.claimed_tokens >= 0 ? f.claimed_tokens : static_cast<int64_t>(f.tokens.size()));
  put<int64_t>(bytes, 24, static_cast<int64_t>(f.starts.size()));
  put<uint32_t>(bytes, 32, (f.mask.empty() ? 0u : 1u) | (f.starts.empty() ? 0u : 2u));
  put<uint32_t>(bytes, 36, f.vocab_size);
  put<int64_t>(bytes, 40, -1);
  std::memcpy(bytes.data() + 48, f.tokenizer.data(), std::min<std::size_t>(f.tokenizer.size(), 127));
  const auto* tokens = reinterpret_cast<const char*>(f.tokens.data());
  bytes.insert(bytes.end(), tokens, tokens + f.tokens.size() * sizeof(uint16_t));
  pad_to_8(bytes);
  if (!f.mask.empty()) {
    bytes.insert(bytes.end(), f.mask.begin(), f.mask.end());
    pad_to_8(bytes);
  }
  const auto* starts = reinterpret_cast<const char*>(f.starts.data());
  bytes.insert(bytes.end(), starts, starts + f.starts.size() * sizeof(int64_t));
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

SamplerSpec sampler_spec(const std::string& order, int64_t B, int64_t T, int64_t dp, int64_t rank) {
  SamplerSpec s;
  s.order = order;
  s.rows = B;
  s.seq_len = T;
  s.dp_size = dp;
  s.dp_rank = rank;
  s.seed = 42;
  s.vocab_size = 1000;
  return s;
}

}  // namespace plait::test
