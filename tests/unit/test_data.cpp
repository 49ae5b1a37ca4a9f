#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <set>

#include "data/batch_upload.hpp"
#include "data/make_sampler.hpp"
#include "data/sampler.hpp"
#include "data/token_source.hpp"
#include "plait/sdk/error.hpp"
#include "support/test_support.hpp"
#include "support/token_files.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;

namespace {

template <class T>
fs::path write_tokens(const fs::path& path, const std::vector<T>& tokens, const std::vector<int32_t>& header = {}) {
  std::ofstream out(path, std::ios::binary);
  if (!header.empty()) {
    std::vector<int32_t> h(256, 0);
    std::copy(header.begin(), header.end(), h.begin());
    out.write(reinterpret_cast<const char*>(h.data()), 1024);
  }
  out.write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(tokens.size() * sizeof(T)));
  return path;
}

std::vector<uint16_t> iota_tokens(int n, int mod = 1000) {
  std::vector<uint16_t> t(n);
  for (int i = 0; i < n; ++i) t[i] = static_cast<uint16_t>(i % mod);
  return t;
}

}  // namespace

TEST_CASE("a text file is read as one token per byte", "[data]") {
  TempDir dir;
  auto f = TokenFile::open_text(write_file(dir / "t.txt", "hello").string());
  REQUIRE(f->size() == 5);
  CHECK(f->at(0) == 'h');
  CHECK(f->at(4) == 'o');
}

TEST_CASE("token files: raw uint16 and llm.c's header are told apart by the magic number", "[data]") {
  TempDir dir;
  auto raw = TokenFile::open_tokens(write_tokens(dir / "raw.bin", iota_tokens(10)).string());
  CHECK(raw->size() == 10);
  CHECK(std::string(raw->format()) == "raw uint16");
  CHECK(raw->at(9) == 9);
  auto v1 = TokenFile::open_tokens(write_tokens(dir / "v1.bin", iota_tokens(300), {20240520, 1, 300}).string());
  CHECK(v1->size() == 300);
  CHECK(v1->at(0) == 0);  // the header is not read as tokens
  CHECK(v1->at(299) == 299);
  auto v2 = TokenFile::open_tokens(
      write_tokens(dir / "v2.bin", std::vector<uint32_t>{70000, 5, 6}, {20240520, 2, 3}).string());
  CHECK(v2->at(0) == 70000);
  CHECK_THROWS_WITH(TokenFile::open_tokens(write_tokens(dir / "short.bin", iota_tokens(3), {20240520, 1, 9}).string()),
                    Contains("header says 9 tokens but the file holds 3"));
  CHECK_THROWS_WITH(TokenFile::open_tokens(write_file(dir / "odd.bin", "abc").string()),
                    Contains("odd number of bytes"));
  CHECK_THROWS_WITH(TokenFile::open_tokens((dir / "missing.bin").string()), Contains("cannot open"));
}

TEST_CASE("sequential order is llm.c's loader: batch k reads B*T+1 tokens from k*B*T", "[data]") {
  TempDir dir;
  auto file = TokenFile::open_tokens(write_tokens(dir / "t.bin", iota_tokens(100)).string());
  BatchSampler s(sampler_spec("sequential", 2, 4), file, nullptr);
  Batch b0 = s.next();
  // inputs = tokens[0:8] as [2, 4], targets = tokens[1:9]
  CHECK(at::equal(b0.inputs, at::arange(8, at::kLong).view({2, 4})));
  CHECK(at::equal(b0.targets, at::arange(1, 9, at::kLong).view({2, 4})));
  Batch b1 = s.next();
  CHECK(b1.inputs.index({0, 0}).item<int64_t>() == 8);
  for (int k = 2; k < 12; ++k) s.next();
  Batch b12 = s.next();  // starts at 96: 96..99 then wraps to 0..
  CHECK(b12.inputs.index({0, 0}).item<int64_t>() == 96);
  CHECK(b12.targets.index({0, 3}).item<int64_t>() == 0);
  CHECK(b12.inputs.index({1, 0}).item<int64_t>() == 0);
}

TEST_CASE("every order splits a global batch by data-parallel rank exactly as one process sees it", "[data]") {
  TempDir dir;
  auto file = TokenFile::open_tokens(write_tokens(dir / "t.bin", iota_tokens(5000, 997)).string());
  auto language = std::make_shared<SyntheticLanguage>(1000, 42);
  for (const std::string order : {"sequential", "random", "synthetic"}) {
    INFO(order);
    auto make = [&](int64_t B, int64_t dp, int64_t rank) {
      const bool synthetic = order == "synthetic";
      return BatchSampler(sampler_spec(synthetic ? "random" : order, B, 8, dp, rank), synthetic ? nullptr : file,
                          synthetic ? language : nullptr);
    };
    BatchSampler whole = make(6, 1, 0);
    BatchSampler r0 = make(2, 3, 0), r1 = make(2, 3, 1), r2 = make(2, 3, 2);
    for (int k = 0; k < 3; ++k) {
      Batch w = whole.next();
      Batch b0 = r0.next(), b1 = r1.next(), b2 = r2.next();
      CHECK(at::equal(w.inputs, at::cat({b0.inputs, b1.inputs, b2.inputs})));
      // The samples' ids too (dropout masks are keyed on them).
      CHECK(w.first_sample == 6 * k);
      CHECK((b0.first_sample == 6 * k && b1.first_sample == 6 * k + 2 && b2.first_sample == 6 * k + 4));
    }
  }
}

TEST_CASE("random and synthetic batches are reproducible and differ by seed", "[data]") {
  TempDir dir;
  auto file = TokenFile::open_tokens(write_tokens(dir / "t.bin", iota_tokens(5000, 997)).string());
  BatchSampler a(sampler_spec("random", 4, 16), file, nullptr), b(sampler_spec("random", 4, 16), file, nullptr);
  CHECK(at::equal(a.next().inputs, b.next().inputs));
  auto other = sampler_spec("random", 4, 16);
  other.seed = 43;
  BatchSampler c(other, file, nullptr);
  a.next();
  CHECK_FALSE(at::equal(a.next().inputs, c.next().inputs));
  // Windows are contiguous runs of the file: targets are inputs shifted by one.
  Batch x = b.next();
  CHECK(at::equal(x.inputs.narrow(1, 1, 15), x.targets.narrow(1, 0, 15)));
}

TEST_CASE("the synthetic language is learnable: each token has four successors", "[data]") {
  SyntheticLanguage lang(256, 1);
  std::vector<int64_t> seq(5000);
  lang.sequence(0, 5000, seq.data());
  std::map<int64_t, std::set<int64_t>> next;
  for (std::size_t i = 0; i + 1 < seq.size(); ++i) next[seq[i]].insert(seq[i + 1]);
  for (const auto& [token, successors] : next) CHECK(successors.size() <= 4);
  CHECK(SyntheticLanguage::entropy_nats() == Approx(1.2080).epsilon(1e-3));
}

TEST_CASE("sampler state is a count of global samples: it restores under another split of the batch", "[data]") {
  TempDir dir;
  auto file = TokenFile::open_tokens(write_tokens(dir / "t.bin", iota_tokens(5000, 997)).string());
  auto language = std::make_shared<SyntheticLanguage>(1000, 42);
  for (const std::string order : {"sequential", "random", "synthetic"}) {
    INFO(order);
    const bool synthetic = order == "synthetic";
    auto make = [&](int64_t B, int64_t dp, int64_t rank) {
      return BatchSampler(sampler_spec(synthetic ? "random" : order, B, 8, dp, rank), synthetic ? nullptr : file,
                          synthetic ? language : nullptr);
    };
    // Saved by dp 2 x B 2 after 3 global batches of 4 rows: 12 samples.
    BatchSampler saved = make(2, 2, 1);
    for (int i = 0; i < 3; ++i) saved.next();
    const std::string state = saved.state();
    CHECK(nlohmann::json::parse(state).at("samples").get<int64_t>() == 12);
    // Read on by one process with B 4: its batch 3 holds samples 12..15, as the uninterrupted
    // dp 2 x B 2 run's batches 3 (rows 12, 13 and 14, 15) and 4 do.
    BatchSampler resumed = make(4, 1, 0);
    resumed.restore(state);
    CHECK(resumed.position() == 3);
    const Batch next = resumed.next();
    CHECK(next.first_sample == 12);
    BatchSampler r0 = make(2, 2, 0), r1 = make(2, 2, 1);
    for (int i = 0; i < 3; ++i) r0.next(), r1.next();
    CHECK(at::equal(next.inputs, at::cat({r0.next().inputs, r1.next().inputs})));
  }
  BatchSampler c(sampler_spec("sequential", 2, 8), file, nullptr);
  CHECK_THROWS_WITH(c.restore(R"({"order":"random","seed":42,"samples":4})"),
                    "the checkpoint's data is order 'random' seed 42, this run's is order 'sequential' seed 42");
}

TEST_CASE("data that does not fit the model or the batch is refused", "[data]") {
  TempDir dir;
  auto file = TokenFile::open_tokens(write_tokens(dir / "t.bin", iota_tokens(50)).string());
  CHECK_THROWS_WITH(BatchSampler(sampler_spec("sequential", 4, 16), file, nullptr),
                    Contains("holds 50 tokens; one sequential global batch needs 65"));
  auto small_vocab = sampler_spec("sequential", 1, 8);
  small_vocab.vocab_size = 5;
  BatchSampler s(small_vocab, file, nullptr);
  CHECK_THROWS_WITH(s.next(), Contains("token 5 at position 5") && Contains("vocab_size 5"));
}

TEST_CASE("[data] settings are checked against the model", "[data]") {
  ModelSpec model{"gpt2", "tiny", 2, 4, 4, 64, 256, 128, 64, 10000.0, 1e-5};
  Options text("data", {{"source", std::string("text")}, {"order", std::string("random")},
                        {"micro_batch_size", int64_t{2}}, {"path", std::string("/nonexistent")}});
  CHECK_THROWS_WITH(make_sampler(text, model, 1, 1, 0), Contains("text data has 256 byte tokens"));
  Options no_path("data", {{"source", std::string("tokens")}, {"order", std::string("random")},
                           {"micro_batch_size", int64_t{2}}});
  CHECK_THROWS_WITH(make_sampler(no_path, model, 1, 1, 0), Contains("needs data.path"));
  Options too_long("data", {{"source", std::string("synthetic")}, {"order", std::string("random")},
                            {"micro_batch_size", int64_t{2}}, {"seq_len", int64_t{65}}});
  CHECK_THROWS_WITH(resolve_seq_len(too_long, model), Contains("seq_len 65 is longer than the model's block_size 64"));
}

TEST_CASE("a step's batches go to the device once with only what the rank's stages read: inputs for the first stage "
          "and targets for the last",
          "[data][device]") {
  Batch b;
  b.inputs = at::arange(8, at::kLong).view({2, 4});
  b.targets = b.inputs + 1;
  b.documents = at::zeros({2, 4}, at::kLong);
  b.positions = at::arange(4, at::kLong).repeat({2, 1});
  const c10::Device meta(c10::kMeta);

  const Batch middle = batches_on({b}, meta, StageReads{false, false}).at(0);
  CHECK(middle.inputs.is_cpu());
  CHECK(middle.inputs.is_same(b.inputs));  // left on the host, read for its shape only
  CHECK(middle.targets.is_cpu());
  CHECK(middle.documents.is_meta());  // every stage's attention reads the layout
  CHECK(middle.positions.is_meta());

  const Batch last = batches_on({b}, meta, StageReads{false, true}).at(0);
  CHECK(last.inputs.is_cpu());
  CHECK(last.targets.is_meta());
  const Batch whole = batches_on({b}, meta).at(0);
  CHECK(whole.inputs.is_meta());
  CHECK(whole.targets.is_meta());
  CHECK(b.inputs.is_cpu());  // the host's batch stays as it was
}
