#pragma once
// Where tokens come from. A file-backed source is a finite token array (memory-mapped);
// the synthetic source makes each sequence on demand from the seed.
//
//   text:   any file, one token per byte (vocabulary 256).
//   tokens: uint16 tokens, either a raw array (nanoGPT's .bin) or llm.c's format: a
//           1024-byte header of 256 int32 (magic 20240520, version 1 = uint16 tokens or
//           2 = uint32 tokens, token count) followed by the tokens; or plait's own
//           format (token_file_format.hpp), which adds a loss mask and document starts.
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
  // Whether the target at position i counts in the loss (files without a mask: all do).
  bool counts(int64_t i) const { return mask_ == nullptr || mask_[i] != 0; }
  bool has_mask() const { return mask_ != nullptr; }
  // Positions in [begin, end) that count (0 <= begin <= end <= size()): a table of counts
  // per block of kMaskBlock tokens, so a row costs at most two partial blocks.
  int64_t counted(int64_t begin, int64_t end) const;
  // Documents recorded in the file (0 when it has none) and the first token of each.
  int64_t documents() const { return documents_; }
  int64_t document_start(int64_t d) const { return document_starts_[d]; }
  // The tokenizer's vocabulary size and name as the file records them (0 / "": unknown).
  int64_t tokenizer_vocab() const { return tokenizer_vocab_; }
  const std::string& tokenizer() const { return tokenizer_; }
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
  void read_plait_sections();
  static constexpr int64_t kMaskBlock = 4096;

  std::string path_;
  const char* format_ = "";
  void* mapping_ = nullptr;
  std::size_t mapping_bytes_ = 0;
  const void* tokens_ = nullptr;
  int width_ = 1;
  int64_t count_ = 0;
  const uint8_t* mask_ = nullptr;
  std::vector<int64_t> counted_before_block_;  // counted positions before block j
  const int64_t* document_starts_ = nullptr;
  int64_t documents_ = 0;
  int64_t tokenizer_vocab_ = 0;
  std::string tokenizer_;
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
