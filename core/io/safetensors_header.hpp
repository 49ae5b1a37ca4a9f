#pragma once
// A safetensors header read and checked, without LibTorch: {name: {dtype, shape,
// data_offsets}} from the JSON text after the 8-byte length. Every entry is refused, in
// the file's name, unless its dtype is one plait reads, its dimensions are not negative
// and their product fits, its offsets are two and ordered, inside the data, and hold
// exactly shape x dtype-size bytes. Untrusted input (Hugging Face folders, checkpoints):
// the fuzz target tests/fuzz/fuzz_safetensors_header.cpp drives it.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace plait {

struct SafetensorsEntry {
  std::string dtype;            // "F32", "BF16", ...
  std::vector<int64_t> shape;
  int64_t begin = 0, end = 0;   // absolute byte offsets in the file
};

// `text`: the header's bytes; `file_size`: the whole file's (8 + header + data).
std::map<std::string, SafetensorsEntry> parse_safetensors_entries(const std::string& text, int64_t file_size,
                                                                  const std::string& path);
// Bytes per element of a dtype plait reads; 0 for one it does not.
int64_t safetensors_dtype_bytes(const std::string& dtype);

}  // namespace plait
