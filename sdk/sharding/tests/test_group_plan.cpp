// The sharding engine's group plan, without communicators or tensors: which parameters
// share a group, the padding and each rank's shard, the segments a checkpoint stores,
// stage 3's persistent group, merging up to a cap, and a plan for 1024 ranks of a
// 7B-sized model that no machine here could run.
#include <algorithm>
#include <map>
#include <numeric>

#include <catch2/catch.hpp>

#include "plait/sdk/error.hpp"
#include "plait/sharding/group_plan.hpp"

using namespace plait;
using namespace plait::sharding;
using Catch::Matchers::Contains;

namespace {

// embeddings, `blocks` blocks of four parameters, and a head that reads the embedding.
struct TinyModel {
  std::vector<ParamShape> params;
  std::vector<UnitShape> units;
};

TinyModel tiny_model(int blocks, int64_t weight = 12, int64_t bias = 3) {
  TinyModel m;
  auto add = [&](UnitShape& unit, const std::string& name, int64_t numel, bool decay) {
    unit.params.push_back(m.params.size());
    m.params.push_back({unit.prefix + name, numel, decay, {}});
  };
  UnitShape wte{"transformer.wte.", {}, {}};
  add(wte, "weight", 40, true);
  m.units.push_back(wte);
  for (int b = 0; b < blocks; ++b) {
    UnitShape h{"transformer.h." + std::to_string(b) + ".", {}, {}};
    add(h, "attn.weight", weight, true);
    add(h, "attn.bias", bias, false);
    add(h, "mlp.weight", weight, true);
    add(h, "ln.weight", bias, false);
    m.units.push_back(h);
  }
  m.units.push_back({"lm_head.", {}, {"transformer.wte.weight"}});
  return m;
}

ShardingOptions stage(int s) {
  ShardingOptions o;
  o.plugin = "test";
  o.stage = s;
  return o;
}

// Every element of every parameter lies in exactly one rank's segments, at its place.
void expect_segments_cover(const GroupPlan& plan, const std::vector<ParamShape>& params, int ranks) {
  std::map<std::size_t, std::vector<int>> seen;  // parameter -> how often each element was covered
  for (const auto& p : plan.groups) {
    for (std::size_t i : p.params) seen[i].assign(static_cast<std::size_t>(params[i].numel), 0);
  }
  for (const auto& g : plan.groups) {
    for (int r = 0; r < ranks; ++r) {
      int64_t previous_end = 0;
      for (const Segment& s : segments_of(g, params, r)) {
        CHECK(s.offset >= previous_end);  // in order, not overlapping
        CHECK(s.offset + s.length <= g.shard);
        previous_end = s.offset + s.length;
        const std::size_t param = g.params[s.member];
        CHECK(s.decay == params[param].decay);
        // The segment's place in the shard is its place in the flat buffer.
        CHECK(r * g.shard + s.offset == g.offsets[s.member] + s.first);
        for (int64_t e = s.first; e < s.first + s.length; ++e) ++seen[param][static_cast<std::size_t>(e)];
      }
    }
  }
  for (const auto& [param, counts] : seen) {
    INFO(params[param].name);
    CHECK(std::all_of(counts.begin(), counts.end(), [](int c) { return c == 1; }));
  }
}

}  // namespace

TEST_CASE("a tied head shares its embedding's group, and each block is a group of its own", "[sharding]") {
  const TinyModel m = tiny_model(2);
  const GroupPlan plan = plan_groups(m.units, m.params, stage(3), 4, 4);
  REQUIRE(plan.groups.size() == 3);
  CHECK(plan.groups[0].name == "transformer.wte+lm_head");
  CHECK(plan.groups[0].first_unit == 0);
  CHECK(plan.groups[0].last_unit == 3);
  CHECK(plan.groups[1].name == "transformer.h.0");
  CHECK(plan.groups[2].name == "transformer.h.1");
  CHECK(plan.group_of_unit == std::vector<long>{0, 1, 2, 0});  // the head gathers the embedding's group
  for (std::size_t i = 0; i < m.params.size(); ++i) {
    const auto& g = plan.groups[plan.group_of_param[i]];
    CHECK(std::find(g.params.begin(), g.params.end(), i) != g.params.end());
  }
}

TEST_CASE("a group is padded to a multiple of the shard count and every element is in one rank's shard", "[sharding]") {
  const TinyModel m = tiny_model(3, 13, 2);  // 30 elements per block: padded unevenly
  for (int ranks : {1, 2, 4, 7}) {
    INFO(ranks << " ranks");
    const GroupPlan plan = plan_groups(m.units, m.params, stage(2), ranks, 4);
    for (const auto& g : plan.groups) {
      CHECK(g.numel == (g.name == "transformer.wte+lm_head" ? 40 : 30));
      CHECK(g.padded % ranks == 0);
      CHECK(g.padded - g.numel < ranks);
      CHECK(g.shard * ranks == g.padded);
      CHECK(g.offsets.front() == 0);
      CHECK_FALSE(g.sharded_params);  // stage 2 keeps parameters whole
    }
    CHECK(plan.group_of_unit == std::vector<long>(m.units.size(), -1));  // nothing to gather
    expect_segments_cover(plan, m.params, ranks);
  }
}

TEST_CASE("stage 3 keeps parameters under the persistence threshold whole, in one group", "[sharding]") {
  const TinyModel m = tiny_model(2, 12, 3);
  ShardingOptions o = stage(3);
  o.persistence_threshold = 4;  // the biases and norms (3 elements)
  const GroupPlan plan = plan_groups(m.units, m.params, o, 2, 4);
  REQUIRE(plan.groups.size() == 4);
  const PlannedGroup& persistent = plan.groups.back();
  CHECK(persistent.name == "persistent");
  CHECK_FALSE(persistent.sharded_params);
  CHECK(persistent.params.size() == 4);
  CHECK(persistent.numel == 12);
  for (std::size_t k = 0; k + 1 < plan.groups.size(); ++k) CHECK(plan.groups[k].sharded_params);
  CHECK(plan.groups[1].numel == 24);  // h.0's two matrices
  expect_segments_cover(plan, m.params, 2);
}

TEST_CASE("consecutive groups merge up to the cap, and no further", "[sharding]") {
  const TinyModel m = tiny_model(4, 256 * 1024 - 3, 3);  // a block: 2 MiB of float32
  ShardingOptions o = stage(1);
  o.group_cap_mb = 4.0;
  const GroupPlan plan = plan_groups(m.units, m.params, o, 2, 4);
  REQUIRE(plan.groups.size() == 3);
  CHECK(plan.groups[0].name == "transformer.wte+lm_head+transformer.h.0");
  CHECK(plan.groups[1].name == "transformer.h.1+transformer.h.2");
  CHECK(plan.groups[2].name == "transformer.h.3");
  CHECK(plan.groups[1].first_unit == 2);
  CHECK(plan.groups[1].last_unit == 3);
  expect_segments_cover(plan, m.params, 2);
}

TEST_CASE("a unit that borrows a parameter nobody owns is refused, naming both", "[sharding]") {
  TinyModel m = tiny_model(1);
  m.units.back().borrowed = {"transformer.wpe.weight"};
  CHECK_THROWS_WITH(plan_groups(m.units, m.params, stage(3), 2, 4),
                    Contains("test: unit lm_head. borrows 'transformer.wpe.weight', which no unit owns"));
}

TEST_CASE("a 7B-sized model planned for 1024 ranks: shards within one element of even, all of it covered", "[sharding]") {
  // Llama-2-7B's shapes: 32 blocks of 4 attention and 3 MLP matrices and two norms.
  TinyModel m;
  const int64_t h = 4096, f = 11008, vocab = 32000;
  m.units.push_back({"model.embed_tokens.", {0}, {}});
  m.params.push_back({"model.embed_tokens.weight", vocab * h, true, {}});
  for (int b = 0; b < 32; ++b) {
    UnitShape u{"model.layers." + std::to_string(b) + ".", {}, {}};
    for (const auto& [name, numel] : std::vector<std::pair<std::string, int64_t>>{
             {"q", h * h}, {"k", h * h}, {"v", h * h}, {"o", h * h}, {"gate", h * f}, {"up", h * f}, {"down", f * h},
             {"norm1", h}, {"norm2", h}}) {
      u.params.push_back(m.params.size());
      m.params.push_back({u.prefix + name, numel, numel > h, {}});
    }
    m.units.push_back(u);
  }
  m.units.push_back({"lm_head.", {m.params.size()}, {}});
  m.params.push_back({"lm_head.weight", vocab * h, true, {}});
  const int64_t total = std::accumulate(m.params.begin(), m.params.end(), int64_t{0},
                                        [](int64_t n, const ParamShape& p) { return n + p.numel; });
  CHECK(total == 6738415616 - 4096);  // Llama-2-7B without its final norm

  const GroupPlan plan = plan_groups(m.units, m.params, stage(3), 1024, 2);
  REQUIRE(plan.groups.size() == 34);
  int64_t largest_shard = 0, padded = 0;
  for (const auto& g : plan.groups) {
    INFO(g.name);
    largest_shard = std::max(largest_shard, g.shard);
    padded += g.padded;
    auto held = [&](int rank) {
      int64_t n = 0;
      for (const Segment& s : segments_of(g, m.params, rank)) n += s.length;
      return n;
    };
    CHECK(held(0) == g.shard);
    CHECK(held(511) == g.shard);
    CHECK(held(1023) == g.shard - (g.padded - g.numel));  // the padding is the last rank's
  }
  CHECK(largest_shard == (202383360 + 1023) / 1024);  // a block: 4h^2 + 3hf + 2h
  CHECK(padded - total < 34 * 1024);
}
