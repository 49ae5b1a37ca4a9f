// The safetensors header reader (Hugging Face folders, plait's checkpoints): the input is
// the header's JSON; the data after it is taken to be 1 KiB, so offsets can be in or out.
#include <cstddef>
#include <cstdint>
#include <string>

#include "io/safetensors_header.hpp"
#include "plait/sdk/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string header(reinterpret_cast<const char*>(data), size);
  try {
    for (const auto& [name, e] : plait::parse_safetensors_entries(header, 8 + static_cast<int64_t>(size) + 1024, "f.safetensors")) {
      // What the entry promises must hold: the readers pread exactly these bytes.
      if (e.begin < 8 + static_cast<int64_t>(size) || e.end > 8 + static_cast<int64_t>(size) + 1024 || e.begin > e.end) {
        __builtin_trap();
      }
    }
  } catch (const plait::Error&) {
  }
  return 0;
}
