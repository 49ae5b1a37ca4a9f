#pragma once
// Where tokens come from. A file-backed source is a finite token array (memory-mapped);
// the synthetic source makes each sequence on demand from the seed.
//
//   text:   any file, one token per byte (vocabulary 256).
//   tokens: uint16 tokens, either a raw array (nanoGPT's .bin) or llm.c's format: a
//           1024-byte header of 256 int32 (magic 20240520, version 1 = uint16 tokens or
//           2 = uint32 tokens, token count) followed by the tokens.
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace plait {

// A generator fully determined by the given words (seed, batch, row, ...).
std::mt19937_64 seeded_rng(std::initializer_list<uint64_t> words);

class TokenFile {
 public:
  static std::shared_ptr<TokenFile> open_text(const std::string& path);
  static std::shared_ptr<TokenFile> open_tokens(const std::string& path);
  ~TokenFile();
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;

  int64_t size() const { return count_; }
  const void* data() const { return tokens_; }
  int width() const { return width_; }  // bytes per token
  const std::string& path() const { return path_; }
  const char* format() const { return format_; }
  // Token at position i (0 <= i < size()).
  int64_t at(int64_t i) const {
    switch (width_) {
      case 1: return static_cast<const uint8_t*>(tokens_)[i];
      case 2: return static_cast<const uint16_t*>(tokens_)[i];
      default: return static_cast<const uint32_t*>(tokens_)[i];
    }
  }

 private:
  TokenFile() = default;
  void map(const std::string& path);

  std::string path_;
  const char* format_ = "";
  void* mapping_ = nullptr;
  std::size_t mapping_bytes_ = 0;
  const void* tokens_ = nullptr;
  int width_ = 1;
  int64_t count_ = 0;
};

// A seeded "language" that a model can learn: each token has four possible successors
// with probabilities 0.5, 0.25, 0.15, 0.1, so the best achievable loss is their entropy,
// about 1.21 nats. Sequence (k, j) depends only on the seed, k and j.
class SyntheticLanguage {
 public:
  SyntheticLanguage(int64_t vocab_size, uint64_t seed);
  // `length` tokens of the run's sample `sample` into out.
  void sequence(int64_t sample, int64_t length, int64_t* out) const;
  static double entropy_nats();

 private:
  int64_t vocab_size_;
  uint64_t seed_;
  std::vector<int64_t> successors_;  // vocab_size x 4
};

}  // namespace plait
