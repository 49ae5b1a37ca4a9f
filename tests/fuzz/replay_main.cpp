// A driver for the fuzz targets without libFuzzer (the suite's GCC build): every file of
// the seed corpora given on the command line, then mutations of them (bytes flipped,
// inserted, deleted, runs duplicated; a fixed seed, so a failure repeats) for the seconds
// given. tools/fuzz runs the same targets under libFuzzer with ASan and UBSan for as long
// as asked; this keeps each target exercised in every CI run.
//
//   fuzz_config_replay SECONDS CORPUS_DIR...
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size);

namespace {

std::string mutate(std::string s, std::mt19937_64& rng) {
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    const std::size_t at = s.empty() ? 0 : rng() % s.size();
    switch (rng() % 5) {
      case 0: if (!s.empty()) s[at] = static_cast<char>(s[at] ^ (1u << (rng() % 8))); break;
      case 1: s.insert(at, 1, static_cast<char>(rng() % 256)); break;
      case 2: if (!s.empty()) s.erase(at, 1 + rng() % 8); break;
      case 3: if (!s.empty()) s.insert(at, s.substr(at, 1 + rng() % 16)); break;
      default: {
        static const char* tokens[] = {"\"", "{", "}", "[", "]", ",", ":", "=", "\n", "-1", "1e309", "9223372036854775807",
                                       "null", "true", "\\u0000", "\xff", "[[", "]]"};
        s.insert(at, tokens[rng() % (sizeof(tokens) / sizeof(tokens[0]))]);
      }
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s SECONDS CORPUS_DIR...\n", argv[0]);
    return 2;
  }
  const double seconds = std::stod(argv[1]);
  std::vector<std::string> seeds;
  for (int i = 2; i < argc; ++i) {
    for (const auto& e : std::filesystem::directory_iterator(argv[i])) {
      std::ifstream in(e.path(), std::ios::binary);
      seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  }
  if (seeds.empty()) {
    std::fprintf(stderr, "no seed inputs in the corpus folders\n");
    return 2;
  }
  long runs = 0;
  // Anything but plait::Error escaping the target is a defect: the input is kept to replay it.
  auto run_one = [&](const std::string& input) {
    try {
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
      ++runs;
      return true;
    } catch (const std::exception& e) {
      const std::string kept = std::string(argv[0]) + ".crash";
      std::ofstream(kept, std::ios::binary) << input;
      std::fprintf(stderr, "input %ld threw: %s\n(kept in %s)\n", runs, e.what(), kept.c_str());
      return false;
    }
  };
  for (const auto& s : seeds) {
    if (!run_one(s)) return 1;
  }
  std::mt19937_64 rng(20261204);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (!run_one(mutate(seeds[rng() % seeds.size()], rng))) return 1;
  }
  std::printf("%ld inputs (%zu seeds, then mutations for %.1f s): none crashed, hung or threw anything but plait::Error\n",
              runs, seeds.size(), seconds);
  return 0;
}
