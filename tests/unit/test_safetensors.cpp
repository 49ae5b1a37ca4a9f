#include <catch2/catch.hpp>

#include <fstream>

#include "io/safetensors.hpp"
#include "plait/sdk/error.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;

TEST_CASE("tensors of every dtype survive a safetensors round trip", "[io]") {
  TempDir dir;
  const auto path = (dir / "t.safetensors").string();
  NamedTensorList in = {
      {"a.weight", at::randn({3, 4}, at::kFloat)},
      {"b", at::randn({5}, at::kDouble)},
      {"c", at::randn({2, 2}, at::kFloat).to(at::kBFloat16)},
      {"ids", at::arange(7, at::TensorOptions().dtype(at::kLong))},
      {"scalar", at::full({}, 3.5, at::kFloat)},
      {"noncontig", at::randn({4, 3}, at::kFloat).t()},
  };
  save_safetensors(path, in, {{"format", "pt"}});
  CHECK_FALSE(fs::exists(path + ".partial"));
  NamedTensorList out = load_safetensors(path);
  REQUIRE(out.size() == in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    CHECK(out[i].first == in[i].first);
    CHECK(out[i].second.scalar_type() == in[i].second.scalar_type());
    CHECK(out[i].second.sizes() == in[i].second.sizes());
    CHECK(at::equal(out[i].second, in[i].second.contiguous()));
  }
}

TEST_CASE("the header is JSON padded to 8 bytes, as the reference writer makes it", "[io]") {
  TempDir dir;
  const auto path = (dir / "t.safetensors").string();
  save_safetensors(path, {{"x", at::ones({3}, at::kFloat)}});
  std::ifstream in(path, std::ios::binary);
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  CHECK(n % 8 == 0);
  std::string header(n, '\0');
  in.read(header.data(), static_cast<std::streamsize>(n));
  CHECK_THAT(header, Contains("\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]}"));
  CHECK(fs::file_size(path) == 8 + n + 12);
}

TEST_CASE("a header whose entries cannot be true is refused, naming the tensor", "[io]") {
  const auto says = [](const std::string& header, int64_t data_bytes) {
    try {
      parse_safetensors_header(header, 8 + static_cast<int64_t>(header.size()) + data_bytes, "h.safetensors");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(says(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}})", 12).empty());
  CHECK_THAT(says(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 12),
             Contains("h.safetensors: tensor x in the safetensors header says 12 bytes by its shape and dtype but its "
                      "offsets hold 8"));
  CHECK_THAT(says(R"({"x":{"dtype":"F32","shape":[-3],"data_offsets":[0,12]}})", 12), Contains("has a shape no tensor can have"));
  CHECK_THAT(says(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[12]}})", 12), Contains("data_offsets outside"));
  CHECK_THAT(says(R"({"x":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,12]}})", 12),
             Contains("has a shape no tensor can have"));
  CHECK_THAT(says(R"({"x":{"dtype":"F32","shape":"3","data_offsets":[0,12]}})", 12),
             Contains("tensor x in the safetensors header is malformed: it is damaged: a string stands where an array belongs") &&
                 !Contains("json.exception") && !Contains("type must be"));
  CHECK_THAT(says(R"([1,2])", 0), Contains("safetensors header is not a JSON object"));
  CHECK_THAT(says(R"({"x":{"dtype":"Q4","shape":[3],"data_offsets":[0,12]}})", 12), Contains("unsupported safetensors dtype Q4"));
}

TEST_CASE("a truncated or foreign file is refused with its path", "[io]") {
  TempDir dir;
  const auto path = (dir / "t.safetensors").string();
  save_safetensors(path, {{"x", at::ones({100}, at::kFloat)}});
  fs::resize_file(path, fs::file_size(path) - 10);
  REQUIRE_THROWS_WITH(load_safetensors(path), Contains("t.safetensors: tensor x in the safetensors header has "
                                                       "data_offsets outside the file's 390 bytes of data"));
  write_file(dir / "junk.safetensors", "this is not a tensor file at all");
  REQUIRE_THROWS_WITH(load_safetensors((dir / "junk.safetensors").string()), Contains("not a safetensors file"));
}
