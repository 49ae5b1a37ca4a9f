#include "loader/library_file.hpp"

#include <cstdint>
#include <cstring>
#include <fstream>

#include "plait/sdk/error.hpp"
#include "util/abbreviate.hpp"

namespace plait {
namespace {

constexpr const char* kHowToBuild = "a plugin is a shared library built with plait_add_plugin() (`plait new plugin` starts one)";

// ELF's e_machine numbers for the machines plait is built on and those a plugin is likely
// to have been built for by mistake.
std::string machine_name(uint16_t machine) {
  switch (machine) {
    case 3: return "x86 (32-bit)";
    case 40: return "ARM (32-bit)";
    case 62: return "x86-64";
    case 183: return "AArch64";
    case 243: return "RISC-V";
    case 21: return "POWER";
    default: return concat("machine ", machine);
  }
}

constexpr uint16_t kThisMachine =
#if defined(__x86_64__)
    62;
#elif defined(__aarch64__)
    183;
#elif defined(__powerpc64__)
    21;
#elif defined(__riscv)
    243;
#else
    0;  // unknown: not checked
#endif

// The words after "<path>: " in dlerror's message, which Boost.DLL puts in brackets.
std::string loader_words(const std::filesystem::path& file, const std::string& what) {
  const std::string mark = "(dlerror system message: ";
  const auto at = what.find(mark);
  std::string words = what;
  if (at != std::string::npos) {
    words = what.substr(at + mark.size());
    words = words.substr(0, words.rfind(')'));
  }
  const std::string prefix = file.string() + ": ";
  if (words.rfind(prefix, 0) == 0) words = words.substr(prefix.size());
  return words;
}

}  // namespace

std::string not_a_library(const std::filesystem::path& file) {
  unsigned char h[20] = {0};
  std::ifstream in(file, std::ios::binary);
  in.read(reinterpret_cast<char*>(h), sizeof(h));
  const auto got = in.gcount();
  if (got < 4 || std::memcmp(h, "\x7f" "ELF", 4) != 0) {
    return concat("is not a shared library: it does not start with an ELF header", got == 0 ? " (it is empty)" : "", "; ",
                  kHowToBuild);
  }
  if (got < 20) return concat("is not a shared library: its ELF header is cut short (", got, " bytes); the file is damaged");
  const bool little = h[5] == 1;
  const auto half = [&](int at) { return static_cast<uint16_t>(little ? h[at] | h[at + 1] << 8 : h[at] << 8 | h[at + 1]); };
  const uint16_t type = half(16), machine = half(18);
  const int bits = h[4] == 2 ? 64 : 32;
  if (bits != static_cast<int>(8 * sizeof(void*)) || (kThisMachine != 0 && machine != kThisMachine)) {
    return concat("was built for another machine (", machine_name(machine), ", ", bits, "-bit), and this plait runs on ",
                  machine_name(kThisMachine), ": build the plugin on (or for) this machine");
  }
  if (type == 1) return concat("is an object file (.o), not a shared library: link it as one; ", kHowToBuild);
  if (type == 2) return concat("is an executable, not a shared library; ", kHowToBuild);
  return "";
}

std::string load_failure(const std::filesystem::path& file, const std::string& what) {
  const std::string words = loader_words(file, what);
  if (const std::string why = not_a_library(file); !why.empty()) return why;
  if (words.find("position-independent executable") != std::string::npos || words.find("cannot dynamically load executable") != std::string::npos) {
    return concat("is an executable, not a shared library; ", kHowToBuild);
  }
  if (const auto at = words.find(": cannot open shared object file"); at != std::string::npos) {
    return concat("needs the library ", abbreviate(words.substr(0, at)), ", which the dynamic loader cannot find: add its "
                  "folder to LD_LIBRARY_PATH, or rebuild the plugin against libraries installed here");
  }
  if (const auto at = words.find("undefined symbol: "); at != std::string::npos) {
    return concat("uses the symbol ", abbreviate(words.substr(at + 18), 120), ", which neither this plait nor its "
                  "libraries define: it was built against another plait or LibTorch; rebuild it against this one");
  }
  return concat("cannot be loaded by the system's dynamic loader, which says: ", abbreviate(words, 200));
}

}  // namespace plait
