#pragma once
// plait's own token file (docs/data-format.md): what tools/prepare_data.py writes from
// JSONL with a real tokenizer. A 1024-byte header says what follows:
//
//   offset  type        field
//   0       char[8]     magic "PLAITTOK"
//   8       uint32      version (1)
//   12      uint32      bytes per token (2 or 4)
//   16      int64       tokens N
//   24      int64       documents D (0: none recorded)
//   32      uint32      sections: 1 = loss mask, 2 = document starts
//   36      uint32      the tokenizer's vocabulary size (0: not recorded)
//   40      int64       end-of-text token (-1: none)
//   48      char[128]   the tokenizer that made it (text, NUL-padded)
//
// then the tokens (N x width), the loss mask (N bytes, 1 where the token counts as a
// target, 0 where it does not) and the document starts (D int64: the first token of
// each document, 0 first, strictly increasing), each section starting at a multiple of 8
// bytes. Little-endian throughout.
#include <cstddef>
#include <cstdint>
#include <string>

namespace plait {

inline constexpr std::size_t kTokenFileHeaderBytes = 1024;
inline constexpr uint32_t kTokenFileVersion = 1;
inline constexpr uint32_t kSectionLossMask = 1;
inline constexpr uint32_t kSectionDocuments = 2;

struct TokenFileLayout {
  int width = 2;
  int64_t tokens = 0;
  int64_t documents = 0;
  bool has_mask = false;
  bool has_documents = false;
  int64_t vocab_size = 0;
  int64_t eos = -1;
  std::string tokenizer;
  std::size_t tokens_at = kTokenFileHeaderBytes, mask_at = 0, documents_at = 0, end = 0;
};

// Whether the file is a plait token file or was meant to be one: the bytes start with
// plait's magic, or nearly (a byte or two off: a damaged header), or `path` ends in
// .plait. Such a file is read by read_token_file_layout, which refuses a damaged one:
// read as raw tokens, its header would become tokens and the model's vocab_size be blamed.
bool is_plait_token_file(const void* bytes, std::size_t size, const std::string& path = "");

// The header's sections, checked against the file's size; refuses a header without the
// exact magic, that is not version 1 or describes more than the file holds, naming `path`.
TokenFileLayout read_token_file_layout(const void* bytes, std::size_t size, const std::string& path);

// Where the sections of a file of this shape go (tokens_at, mask_at, documents_at, end).
void place_sections(TokenFileLayout& layout);

}  // namespace plait
