#pragma once
// What every fuzz target shares: the input as a file (the readers under test read files,
// as they do in a run), and the rule they check. plait's readers may refuse an input
// only with a plait::Error (one sentence naming the place); any other exception, a
// crash, a hang or a sanitizer report is a defect libFuzzer keeps as a reproducer.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

namespace plait::fuzz {

// A file of this process (its pid in the name) holding `bytes`, rewritten for each input.
inline std::string as_file(const uint8_t* data, std::size_t size, const std::string& name) {
  const std::string path = "/tmp/plait-fuzz-" + std::to_string(::getpid()) + "-" + name;
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                                 static_cast<std::streamsize>(size));
  return path;
}

}  // namespace plait::fuzz
