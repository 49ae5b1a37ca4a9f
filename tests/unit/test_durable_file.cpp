// A durable file: its bytes arrive whole under its name only at commit (the writeback
// started chunk by chunk must not reorder or drop any), and one abandoned before its
// commit leaves nothing behind, not even its partial file.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <random>

#include "io/durable_file.hpp"
#include "plait/sdk/error.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;

namespace {
std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
}  // namespace

TEST_CASE("a durable file holds every byte written, in order, once committed", "[io][durable_file]") {
  TempDir dir;
  // 30 MiB and a bit in uneven pieces: several chunks written back and dropped from the cache
  // while later ones are written, and a last partial chunk.
  std::string bytes(30 * (1 << 20) + 12345, '\0');
  std::mt19937_64 gen(3);
  for (auto& c : bytes) c = static_cast<char>(gen());
  const fs::path path = dir / "f.bin";
  {
    DurableFile f(path.string());
    std::size_t at = 0;
    for (std::size_t piece = 1; at < bytes.size(); piece = piece * 3 + 7) {
      const std::size_t n = std::min(piece % (5 << 20) + 1, bytes.size() - at);
      f.write(bytes.data() + at, n);
      at += n;
    }
    CHECK(f.bytes() == static_cast<int64_t>(bytes.size()));
    CHECK_FALSE(fs::exists(path));
    CHECK(fs::exists(dir / "f.bin.partial"));
    f.commit();
  }
  CHECK_FALSE(fs::exists(dir / "f.bin.partial"));
  REQUIRE(fs::file_size(path) == bytes.size());
  CHECK(read_all(path) == bytes);
}

TEST_CASE("a durable file abandoned before its commit leaves nothing", "[io][durable_file]") {
  TempDir dir;
  {
    DurableFile f((dir / "g.bin").string());
    f.write("abc", 3);
  }
  CHECK_FALSE(fs::exists(dir / "g.bin"));
  CHECK_FALSE(fs::exists(dir / "g.bin.partial"));
  CHECK_THROWS_WITH(DurableFile((dir / "no-such-folder" / "h.bin").string()),
                    Catch::Matchers::StartsWith("cannot write " + (dir / "no-such-folder" / "h.bin.partial").string() +
                                                ": No such file or directory"));
}
