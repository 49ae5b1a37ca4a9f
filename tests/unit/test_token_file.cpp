// plait's token file (tools/prepare_data.py's output): its loss mask and document starts
// are read, checked before launch, and turned into -1 targets and the global batch's count
// of counted targets, the same on every data-parallel rank.
#include <catch2/catch.hpp>

#include <random>
#include <set>

#include <ATen/ATen.h>

#include "data/data_check.hpp"
#include "data/make_sampler.hpp"
#include "data/packing.hpp"
#include "data/sampler.hpp"
#include "data/token_source.hpp"
#include "plait/sdk/error.hpp"
#include "support/token_files.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;

namespace {

// n tokens below 1000 with a mask of prompts and responses: runs of 0s and 1s.
PlaitTokens masked_tokens(int n, uint64_t seed = 7) {
  PlaitTokens f;
  std::mt19937_64 rng(seed);
  uint8_t counts = 0;
  for (int i = 0; i < n; ++i) {
    if (rng() % 13 == 0) counts ^= 1;
    f.tokens.push_back(static_cast<uint16_t>(rng() % 1000));
    f.mask.push_back(counts);
    if (i == 0 || rng() % 97 == 0) f.starts.push_back(i);
  }
  return f;
}

int64_t counted_here(const Batch& b) { return b.targets.ne(-1).sum().item<int64_t>(); }

}  // namespace

TEST_CASE("a plait token file gives its tokens, loss mask, documents and tokenizer", "[data]") {
  TempDir dir;
  PlaitTokens f;
  f.tokens = {5, 6, 7, 8, 9};
  f.mask = {0, 0, 1, 1, 0};
  f.starts = {0, 3};
  f.vocab_size = 400;
  f.tokenizer = "tokenizers tokenizer.json";
  auto file = TokenFile::open_tokens(write_plait_tokens(dir / "t.bin", f).string());
  CHECK(std::string(file->format()) == "plait v1 (uint16)");
  REQUIRE(file->size() == 5);
  CHECK(file->at(0) == 5);  // the header is not read as tokens
  CHECK(file->at(4) == 9);
  CHECK(file->has_mask());
  CHECK((!file->counts(1) && file->counts(2) && file->counts(3) && !file->counts(4)));
  CHECK(file->counted(0, 5) == 2);
  CHECK(file->documents() == 2);
  CHECK(file->document_start(1) == 3);
  CHECK(file->tokenizer_vocab() == 400);
  CHECK(file->tokenizer() == "tokenizers tokenizer.json");
}

TEST_CASE("the count of a mask's ones over any range equals counting them one by one", "[data]") {
  TempDir dir;
  const PlaitTokens f = masked_tokens(20000);
  auto file = TokenFile::open_tokens(write_plait_tokens(dir / "t.bin", f).string());
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 2000; ++trial) {
    int64_t a = static_cast<int64_t>(rng() % 20001), b = static_cast<int64_t>(rng() % 20001);
    if (trial % 4 == 0) b = std::min<int64_t>(20000, a + static_cast<int64_t>(rng() % 10));  // short, inside a block
    if (a > b) std::swap(a, b);
    int64_t ones = 0;
    for (int64_t i = a; i < b; ++i) ones += f.mask[static_cast<std::size_t>(i)];
    INFO("[" << a << ", " << b << ")");
    REQUIRE(file->counted(a, b) == ones);
  }
  CHECK(file->counted(0, 20000) > 0);
  CHECK(file->counted(0, 20000) < 20000);
}

TEST_CASE("a token file's mask makes -1 targets, counted alike on every data-parallel rank", "[data][masks]") {
  TempDir dir;
  const PlaitTokens f = masked_tokens(3000);
  auto file = TokenFile::open_tokens(write_plait_tokens(dir / "t.bin", f).string());
  for (const char* order : {"sequential", "random"}) {
    BatchSampler one(sampler_spec(order, 4, 64), file, nullptr);
    BatchSampler first(sampler_spec(order, 2, 64, 2, 0), file, nullptr), second(sampler_spec(order, 2, 64, 2, 1), file, nullptr);
    int64_t masked = 0;
    for (int k = 0; k < 30; ++k) {  // sequential wraps around the file after 11 batches
      const Batch whole = one.next(), a = first.next(), b = second.next();
      INFO(order << " global batch " << k);
      CHECK(whole.counted == counted_here(whole));
      CHECK(a.counted == whole.counted);
      CHECK(b.counted == whole.counted);
      CHECK(counted_here(a) + counted_here(b) == whole.counted);
      CHECK(at::equal(at::cat({a.targets, b.targets}), whole.targets));
      CHECK(whole.inputs.min().item<int64_t>() >= 0);
      // A target is -1 exactly where the file's mask says it does not count.
      const at::Tensor kept = whole.targets.ne(-1);
      const at::Tensor next_inputs = whole.inputs.narrow(1, 1, 63);
      CHECK(at::equal(whole.targets.narrow(1, 0, 63).masked_select(kept.narrow(1, 0, 63)),
                      next_inputs.masked_select(kept.narrow(1, 0, 63))));
      masked += whole.targets.eq(-1).sum().item<int64_t>();
    }
    CHECK(masked > 0);
  }
  // Row 0 of the sequential batch 0 has targets at tokens 1..64.
  BatchSampler s(sampler_spec("sequential", 1, 64), file, nullptr);
  const Batch b = s.next();
  for (int t = 0; t < 64; ++t) {
    INFO("target " << t);
    CHECK((b.targets[0][t].item<int64_t>() == -1) == (f.mask[static_cast<std::size_t>(t + 1)] == 0));
  }
}

TEST_CASE("plait token files that are damaged or wrong are refused, saying what is wrong", "[data]") {
  TempDir dir;
  const PlaitTokens good = masked_tokens(100);
  auto refused = [&](PlaitTokens f, const std::string& words) {
    INFO(words);
    CHECK_THROWS_WITH(TokenFile::open_tokens(write_plait_tokens(dir / "bad.bin", f).string()),
                      Contains(words) && Contains("bad.bin"));
  };
  PlaitTokens f = good;
  f.version = 2;
  refused(f, "is version 2; this plait reads version 1");
  f = good;
  f.width = 3;
  refused(f, "says its tokens are 3 bytes each");
  f = good;
  f.claimed_tokens = 5000;
  refused(f, "header says 5000 tokens");
  f = good;
  f.mask[40] = 2;
  refused(f, "the loss mask has a byte other than 0 and 1 in tokens 0 to 99");
  f = good;
  f.starts = {0, 50, 50};
  refused(f, "document 2 starts at token 50 after document 1 at 50");
  f = good;
  f.starts = {3, 50};
  refused(f, "document 0 starts at token 3 (the first document starts at 0)");
  f = good;
  f.starts = {0, 100};
  refused(f, "document 1 starts at token 100 after document 0 at 0 (of 100 tokens)");
  f = good;
  f.tokens.clear();
  f.mask.clear();
  f.starts.clear();
  refused(f, "holds 0 tokens");
  std::filesystem::resize_file(write_plait_tokens(dir / "cut.bin", good), 1300);  // the tokens, not all the mask
  CHECK_THROWS_WITH(TokenFile::open_tokens((dir / "cut.bin").string()),
                    Contains("header says 100 tokens with a loss mask and") && Contains("but the file is 1300"));
}

TEST_CASE("before launch: a mask that counts nothing and a tokenizer larger than the model are refused", "[data]") {
  TempDir dir;
  ModelSpec model{"gpt2", "tiny", 2, 4, 4, 64, 256, 1000, 64, 10000.0, 1e-5};
  const Options model_table("model", {{"vocab_size", int64_t{1000}}});
  auto data = [&](const fs::path& path) {
    return Options("data", {{"source", std::string("tokens")}, {"order", std::string("random")},
                            {"micro_batch_size", int64_t{2}}, {"path", path.string()}});
  };
  PlaitTokens f = masked_tokens(500);
  f.vocab_size = 1000;
  CHECK_NOTHROW(check_data(data(write_plait_tokens(dir / "ok.bin", f)), model, model_table, 2, true));
  f.vocab_size = 1001;
  f.tokenizer = "sentencepiece sp.model";
  CHECK_THROWS_WITH(check_data(data(write_plait_tokens(dir / "big.bin", f)), model, model_table, 2, true),
                    Contains("was made by a tokenizer of 1001 tokens (sentencepiece sp.model), more than the model's "
                             "vocab_size 1000"));
  f.vocab_size = 1000;
  std::fill(f.mask.begin(), f.mask.end(), 0);
  CHECK_THROWS_WITH(check_data(data(write_plait_tokens(dir / "none.bin", f)), model, model_table, 2, true),
                    Contains("none.bin's loss mask counts none of its 500 tokens"));
}

namespace {

// Documents of the given lengths, every token counted but each document's first.
PlaitTokens documents_of(const std::vector<int>& lengths) {
  PlaitTokens f;
  for (int length : lengths) {
    f.starts.push_back(static_cast<int64_t>(f.tokens.size()));
    for (int i = 0; i < length; ++i) {
      f.tokens.push_back(static_cast<uint16_t>(f.tokens.size() % 1000));
      f.mask.push_back(i == 0 ? 0 : 1);
    }
  }
  return f;
}

}  // namespace

TEST_CASE("packing puts every target of every document into exactly one row, best-fit", "[data][packing]") {
  TempDir dir;
  // 18 and 40 tokens are longer than a row of 16 (17 and 39 targets): cut into pieces of
  // 17 tokens overlapping by one. 17 tokens fit a row exactly.
  const PlaitTokens f = documents_of({5, 9, 18, 1, 12, 3, 40, 8, 8, 2, 17});
  auto file = TokenFile::open_tokens(write_plait_tokens(dir / "docs.bin", f).string());
  PackingReport report;
  const std::vector<PackedRow> rows = pack_documents(*file, 16, &report);
  CHECK(report.documents == 11);
  CHECK(report.cut == 2);
  CHECK(report.left_out == 1);  // the document of one token
  std::multiset<int64_t> targets;
  for (const PackedRow& row : rows) {
    int64_t used = 0, counted = 0;
    for (const Segment& s : row.segments) {
      used += s.end - s.begin - 1;
      counted += file->counted(s.begin + 1, s.end);
      for (int64_t t = s.begin + 1; t < s.end; ++t) targets.insert(t);
    }
    CHECK(used <= 16);
    CHECK(row.counted == counted);
  }
  // Each document's targets are its tokens after the first, once each.
  std::multiset<int64_t> expected;
  for (std::size_t d = 0; d < f.starts.size(); ++d) {
    const int64_t end = d + 1 < f.starts.size() ? f.starts[d + 1] : static_cast<int64_t>(f.tokens.size());
    for (int64_t t = f.starts[d] + 1; t < end; ++t) expected.insert(t);
  }
  CHECK(targets == expected);
  CHECK(report.filled == static_cast<int64_t>(expected.size()));
  CHECK(report.rows == static_cast<int64_t>(rows.size()));
  // 112 positions: 7 rows of 16 at the least. Segments 4 8 16 1 11 2 16 16 7 7 7 1 16 in
  // file order, best-fit: 8 rows (the three 7s leave 9 and 2 free).
  CHECK(report.rows == 8);
}

TEST_CASE("a packed batch holds documents in turn with positions restarting, the same on every rank",
          "[data][packing]") {
  TempDir dir;
  const PlaitTokens f = documents_of({5, 9, 17, 12, 3, 40, 8, 8, 2, 30, 6, 11, 4});
  auto file = TokenFile::open_tokens(write_plait_tokens(dir / "docs.bin", f).string());
  for (const char* order : {"sequential", "random"}) {
    auto packed = [&](int64_t B, int64_t dp, int64_t rank) {
      SamplerSpec s = sampler_spec(order, B, 16, dp, rank);
      s.packing = true;
      return BatchSampler(s, file, nullptr);
    };
    BatchSampler one = packed(4, 1, 0), first = packed(2, 2, 0), second = packed(2, 2, 1);
    for (int k = 0; k < 6; ++k) {
      const Batch whole = one.next(), a = first.next(), b = second.next();
      INFO(order << " global batch " << k);
      CHECK(whole.counted == counted_here(whole));
      CHECK((a.counted == whole.counted && b.counted == whole.counted));
      CHECK(at::equal(at::cat({a.targets, b.targets}), whole.targets));
      CHECK(at::equal(at::cat({a.documents, b.documents}), whole.documents));
      CHECK(at::equal(at::cat({a.positions, b.positions}), whole.positions));
      for (int64_t r = 0; r < 4; ++r) {
        for (int64_t t = 0; t < 16; ++t) {
          const int64_t doc = whole.documents[r][t].item<int64_t>(), pos = whole.positions[r][t].item<int64_t>();
          const bool starts = t == 0 || whole.documents[r][t - 1].item<int64_t>() != doc;
          CHECK((starts ? pos == 0 : pos == whole.positions[r][t - 1].item<int64_t>() + 1));
          // Within a document each target is the next position's input; a document's last
          // target is the token after its last input.
          const int64_t target = whole.targets[r][t].item<int64_t>();
          if (target != -1 && t + 1 < 16 && whole.documents[r][t + 1].item<int64_t>() == doc) {
            CHECK(target == whole.inputs[r][t + 1].item<int64_t>());
          }
        }
      }
    }
  }
}

TEST_CASE("packing needs a token file with document starts, and says so", "[data][packing]") {
  TempDir dir;
  PlaitTokens f = masked_tokens(500);
  f.starts.clear();
  auto file = TokenFile::open_tokens(write_plait_tokens(dir / "flat.bin", f).string());
  SamplerSpec s = sampler_spec("random", 2, 16);
  s.packing = true;
  CHECK_THROWS_WITH(BatchSampler(s, file, nullptr), Contains("flat.bin records no document starts to pack"));
  const ModelSpec model{"gpt2", "tiny", 2, 4, 4, 64, 256, 1000, 64, 10000.0, 1e-5};
  const Options synthetic("data", {{"source", std::string("synthetic")}, {"order", std::string("random")},
                                   {"micro_batch_size", int64_t{2}}, {"packing", true}});
  CHECK_THROWS_WITH(make_sampler(synthetic, model, 1, 1, 0),
                    Contains("[data] packing puts a token file's documents into rows; source = \"synthetic\""));
}
