// The token-file reader: the input is a data file (plait's header, llm.c's, or raw uint16
// tokens), opened as [data] opens it; every token it then claims to hold is read, with its
// mask, the counts of every window and each document start.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "data/token_source.hpp"
#include "fuzz_input.hpp"
#include "plait/sdk/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string path = plait::fuzz::as_file(data, size, "tokens.bin");
  try {
    const auto file = plait::TokenFile::open_tokens(path);
    const auto* bytes = static_cast<const unsigned char*>(file->data());
    uint64_t sum = 0;  // touch every byte it claims (ASan sees a read past the mapping)
    for (int64_t i = 0; i < file->size() * file->width(); ++i) sum += bytes[i];
    for (int64_t i = 0; i < file->size(); ++i) sum += file->counts(i) ? 1 : 0;
    for (int64_t i = 0; i + 7 <= file->size(); i += 7) sum += static_cast<uint64_t>(file->counted(i / 2, i + 7));
    for (int64_t d = 0; d < file->documents(); ++d) sum += static_cast<uint64_t>(file->document_start(d));
    if (sum == 1) std::memset(&sum, 0, sizeof(sum));
  } catch (const plait::Error&) {
  }
  return 0;
}
