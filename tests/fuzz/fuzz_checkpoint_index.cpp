// The checkpoint index reader: the input is a checkpoint's index.json, read as a resume
// reads it (the file, its JSON, every field, the parts' cover of each tensor).
#include <cstddef>
#include <cstdint>
#include <filesystem>

#include "checkpoint/checkpoint_files.hpp"
#include "fuzz_input.hpp"
#include "plait/sdk/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const std::filesystem::path folder = [] {
    const auto f = std::filesystem::path("/tmp") / ("plait-fuzz-index-" + std::to_string(::getpid()));
    std::filesystem::create_directories(f);
    return f;
  }();
  const std::string written = plait::fuzz::as_file(data, size, "index.json");
  std::filesystem::rename(written, folder / "index.json");
  try {
    plait::checkpoint::read_index(folder);
  } catch (const plait::Error&) {
  }
  return 0;
}
