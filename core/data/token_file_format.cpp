#include "data/token_file_format.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "plait/sdk/error.hpp"

namespace plait {
namespace {

constexpr char kMagic[8] = {'P', 'L', 'A', 'I', 'T', 'T', 'O', 'K'};

template <class T>
T field(const void* bytes, std::size_t offset) {
  T value;
  std::memcpy(&value, static_cast<const char*>(bytes) + offset, sizeof(T));
  return value;
}

std::size_t rounded_to_8(std::size_t n) { return (n + 7) / 8 * 8; }

// The magic's place as text, bytes outside printable ASCII as \xNN.
std::string printable(const void* bytes) {
  std::string out;
  for (std::size_t i = 0; i < sizeof(kMagic); ++i) {
    const auto c = static_cast<unsigned char>(static_cast<const char*>(bytes)[i]);
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}

// How many of the first 8 bytes are the magic's.
std::size_t magic_bytes_matching(const void* bytes, std::size_t size) {
  std::size_t same = 0;
  for (std::size_t i = 0; i < std::min(size, sizeof(kMagic)); ++i) same += static_cast<const char*>(bytes)[i] == kMagic[i];
  return same;
}

}  // namespace

bool is_plait_token_file(const void* bytes, std::size_t size, const std::string& path) {
  // Six of eight: a byte or two flipped. Raw uint16 tokens start so only by a rare chance
  // (three of their first four ids would be exactly "PL", "AI", "TT" or "OK").
  return magic_bytes_matching(bytes, size) >= sizeof(kMagic) - 2 || std::filesystem::path(path).extension() == ".plait";
}

void place_sections(TokenFileLayout& l) {
  l.tokens_at = kTokenFileHeaderBytes;
  std::size_t at = rounded_to_8(l.tokens_at + static_cast<std::size_t>(l.tokens) * static_cast<std::size_t>(l.width));
  l.mask_at = l.has_mask ? at : 0;
  if (l.has_mask) at = rounded_to_8(at + static_cast<std::size_t>(l.tokens));
  l.documents_at = l.has_documents ? at : 0;
  if (l.has_documents) at += static_cast<std::size_t>(l.documents) * sizeof(int64_t);
  l.end = at;
}

TokenFileLayout read_token_file_layout(const void* bytes, std::size_t size, const std::string& path) {
  const std::string what = concat("[data] ", path, " (a plait token file)");
  const std::string damaged = concat("[data] ", path, " is a damaged plait token file: ");
  const std::string rewrite = "write it again with tools/prepare_data.py (a file of raw uint16 tokens must not be named .plait)";
  PLAIT_CHECK(size >= sizeof(kMagic), concat(damaged, "it is ", size, " bytes, shorter than its magic number"), rewrite);
  PLAIT_CHECK(magic_bytes_matching(bytes, size) == sizeof(kMagic),
              concat(damaged, "its first 8 bytes are \"", printable(bytes), "\", not plait's magic \"PLAITTOK\""), rewrite);
  PLAIT_CHECK(size >= kTokenFileHeaderBytes,
              concat(what, " is ", size, " bytes, shorter than its ", kTokenFileHeaderBytes, "-byte header"),
              "the file is truncated: write it again with tools/prepare_data.py");
  const auto version = field<uint32_t>(bytes, 8);
  PLAIT_CHECK(version == kTokenFileVersion, concat(what, " is version ", version, "; this plait reads version ", kTokenFileVersion),
              "write it again with this plait's tools/prepare_data.py");
  TokenFileLayout l;
  const auto width = field<uint32_t>(bytes, 12);
  PLAIT_CHECK(width == 2 || width == 4, concat(what, " says its tokens are ", width, " bytes each"),
              "tokens are 2 or 4 bytes: write the file again with tools/prepare_data.py");
  l.width = static_cast<int>(width);
  l.tokens = field<int64_t>(bytes, 16);
  l.documents = field<int64_t>(bytes, 24);
  const auto sections = field<uint32_t>(bytes, 32);
  l.has_mask = (sections & kSectionLossMask) != 0;
  l.has_documents = (sections & kSectionDocuments) != 0;
  l.vocab_size = field<uint32_t>(bytes, 36);
  l.eos = field<int64_t>(bytes, 40);
  const char* name = static_cast<const char*>(bytes) + 48;
  l.tokenizer.assign(name, strnlen(name, 128));
  PLAIT_CHECK(sections <= (kSectionLossMask | kSectionDocuments),
              concat(what, " has sections ", sections, ", which this plait does not know"),
              "write it again with this plait's tools/prepare_data.py");
  PLAIT_CHECK(l.tokens > 0, concat(what, " holds ", l.tokens, " tokens"), "the file has no tokens: prepare it from data with text");
  PLAIT_CHECK(l.documents >= 0 && (l.has_documents ? l.documents > 0 : l.documents == 0),
              concat(what, " says it has ", l.documents, " documents", l.has_documents ? "" : " but no document starts"),
              "the header is wrong: write the file again with tools/prepare_data.py");
  // Bounds in sizes first, so that the placement below cannot overflow.
  const auto room = static_cast<int64_t>(size - kTokenFileHeaderBytes);
  PLAIT_CHECK(l.tokens <= room / l.width && l.documents <= room / 8,
              concat(what, ": header says ", l.tokens, " tokens and ", l.documents, " documents but the file holds ", room,
                     " bytes after it"),
              "the file is truncated or its header is wrong");
  place_sections(l);
  PLAIT_CHECK(l.end <= size,
              concat(what, ": header says ", l.tokens, " tokens", l.has_mask ? " with a loss mask" : "",
                     l.has_documents ? concat(" and ", l.documents, " document starts") : std::string(), ", ", l.end,
                     " bytes, but the file is ", size),
              "the file is truncated or its header is wrong");
  return l;
}

}  // namespace plait
