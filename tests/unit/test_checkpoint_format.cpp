// The checkpoint format on disk: ranks' parts (flat ranges and slices) merged into one
// index, any region read back from whichever parts hold it and only their bytes, the
// atomic commit and `latest`, and the refusals: a flipped byte, a torn save, an unknown
// version, a missing part.
#include <catch2/catch.hpp>

#include <fstream>
#include <functional>

#include <ATen/ATen.h>

#include "checkpoint/checkpoint_files.hpp"
#include "checkpoint/checkpoint_reader.hpp"
#include "checkpoint/shard_writer.hpp"
#include "checkpoint/state_layout.hpp"
#include "plait/sdk/error.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::checkpoint;
using namespace plait::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

TensorPart flat(int64_t start, int64_t length) {
  TensorPart p;
  p.start = start;
  p.length = length;
  return p;
}

TensorPart slice(std::vector<int64_t> offsets, std::vector<int64_t> lengths) {
  TensorPart p;
  p.flat = false;
  p.offsets = std::move(offsets);
  p.lengths = std::move(lengths);
  return p;
}

// A [6, 4] tensor saved as two flat ranges (as ZeRO shards a flat buffer) and a [4, 6]
// one as two column slices (as Megatron splits a row-parallel weight), by two ranks.
struct Saved {
  at::Tensor zero = at::arange(24, at::kFloat).view({6, 4});
  at::Tensor megatron = at::arange(100, 124, at::kFloat).view({4, 6});
  fs::path root, folder;
};

// The state a run saves beside its tensors, as resume and export read it.
nlohmann::ordered_json saved_state(int64_t step) {
  return {{"trainer", {{"step", step}, {"updates", step}, {"skipped", 0}, {"samples", 8 * step}, {"tokens", 512 * step}}},
          {"model", {{"family", "gpt2"}, {"size", "tiny"}, {"n_layer", 2}, {"n_head", 2}, {"n_kv_head", 2},
                     {"n_embd", 64}, {"ffn_hidden", 256}, {"vocab_size", 256}, {"block_size", 64},
                     {"rope_theta", 10000.0}, {"norm_eps", 1e-5}}},
          {"data", {{"order", "synthetic"}, {"seed", 1}}},
          {"global_batch", {{"dp", 2}, {"micro_batch_size", 4}, {"grad_accum", 1}}}};
}

Saved save_two_ranks(const fs::path& dir, int64_t step, bool drop_rank_1_zero_part = false, double megatron_shift = 0) {
  Saved s;
  s.megatron += megatron_shift;
  s.root = dir / "checkpoints";
  const fs::path staging = begin_staging(s.root, step);
  CheckpointIndex index;
  index.step = step;
  index.mesh = {{"dp", 2}, {"pp", 1}, {"tp", 2}};
  index.state = saved_state(step);
  const at::Tensor z = s.zero.reshape({-1});
  std::vector<OwnedPart> rank0 = {{"zero.w", {6, 4}, flat(0, 10), z.narrow(0, 0, 10)},
                                  {"megatron.w", {4, 6}, slice({0, 0}, {4, 3}), s.megatron.narrow(1, 0, 3)}};
  std::vector<OwnedPart> rank1 = {{"megatron.w", {4, 6}, slice({0, 3}, {4, 3}), s.megatron.narrow(1, 3, 3)}};
  if (!drop_rank_1_zero_part) rank1.insert(rank1.begin(), {"zero.w", {6, 4}, flat(10, 14), z.narrow(0, 10, 14)});
  for (const auto& [rank, parts] : std::vector<std::pair<int, std::vector<OwnedPart>>>{{0, rank0}, {1, rank1}}) {
    // Each rank's description makes the trip a multi-rank save makes.
    merge_shard(index, shard_from_json(shard_to_json(write_rank_shard(staging, rank, parts))));
  }
  s.folder = commit(s.root, staging, index);
  return s;
}

}  // namespace

TEST_CASE("a checkpoint's regions read back from flat and sliced parts, whichever rank wrote them",
          "[checkpoint]") {
  TempDir dir;
  const Saved s = save_two_ranks(dir.path(), 5);
  CHECK(s.folder == s.root / "step-5");
  CHECK(resolve_checkpoint(s.root) == s.folder);
  CheckpointReader reader(resolve_checkpoint(s.root));
  reader.verify();
  CHECK(reader.index().step == 5);
  const TensorEntry& z = reader.index().tensors.at("zero.w");
  CHECK(at::equal(reader.read("zero.w", Region::whole(z)), s.zero));
  CHECK(at::equal(reader.read("megatron.w", Region::whole(reader.index().tensors.at("megatron.w"))), s.megatron));

  // A flat range across both ranks' ranges: each file is one checksum block, read whole
  // once to be checked; read again, its bytes come from the block last checked.
  CheckpointReader fresh(s.folder);
  CHECK(at::equal(fresh.read("zero.w", Region::range(7, 6)), s.zero.reshape({-1}).narrow(0, 7, 6)));
  const auto file_bytes = [&](const char* f) { return static_cast<int64_t>(fs::file_size(s.folder / f)); };
  CHECK(fresh.bytes_read() == file_bytes("rank-0.safetensors") + file_bytes("rank-1.safetensors"));
  CHECK(at::equal(fresh.read("zero.w", Region::range(7, 6)), s.zero.reshape({-1}).narrow(0, 7, 6)));
  CHECK(fresh.bytes_read() == file_bytes("rank-0.safetensors") + file_bytes("rank-1.safetensors"));
  // A slice out of flat parts (zero -> megatron), and a flat range out of slices (megatron -> zero).
  CHECK(at::equal(reader.read("zero.w", Region::slice({1, 2}, {4, 2})), s.zero.narrow(0, 1, 4).narrow(1, 2, 2)));
  CHECK(at::equal(reader.read("megatron.w", Region::range(5, 9)), s.megatron.reshape({-1}).narrow(0, 5, 9)));
}

TEST_CASE("two checkpoints compared whole: the same state, then the tensor that differs named", "[checkpoint]") {
  TempDir dir;
  const Saved a = save_two_ranks(dir / "a", 2), b = save_two_ranks(dir / "b", 2);
  CHECK(first_difference(a.folder, b.folder) == "");
  const Saved shifted = save_two_ranks(dir / "c", 2, false, 0.5);
  CHECK(first_difference(a.folder, shifted.folder) == "megatron.w differs");
}

TEST_CASE("verify names the file whose byte was flipped, and its size when truncated", "[checkpoint]") {
  TempDir dir;
  const Saved s = save_two_ranks(dir.path(), 3);
  const fs::path victim = s.folder / "rank-1.safetensors";
  {
    std::fstream f(victim, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-5, std::ios::end);
    const char c = static_cast<char>(f.get());
    f.seekp(-5, std::ios::end);
    f.put(static_cast<char>(c ^ 0x10));
  }
  CheckpointReader reader(s.folder);
  CHECK_THROWS_WITH(reader.verify(), StartsWith(concat("checkpoint file ", victim.string(), " fails its checksum")));
  // A rank reading its region checks the blocks it reads, and names the bytes.
  CHECK_THROWS_WITH(reader.read("megatron.w", Region::whole(reader.index().tensors.at("megatron.w"))),
                    StartsWith(concat("checkpoint file ", victim.string(), " fails its checksum in bytes [")));
  fs::resize_file(victim, fs::file_size(victim) - 1);
  CHECK_THROWS_WITH(reader.verify(), StartsWith(concat("checkpoint file ", victim.string(), " has ")) &&
                                         Contains("its index says"));
}

TEST_CASE("a save that did not finish is never taken for a checkpoint, and latest keeps the previous one", "[checkpoint]") {
  TempDir dir;
  const Saved s = save_two_ranks(dir.path(), 2);
  const fs::path torn = begin_staging(s.root, 4);  // a crash after the ranks started step 4's files
  write_rank_shard(torn, 0, {{"zero.w", {6, 4}, flat(0, 24), s.zero}});
  CHECK(resolve_checkpoint(s.root) == s.root / "step-2");
  CHECK_THROWS_WITH(resolve_checkpoint(torn), Contains("is a checkpoint whose save did not finish (no index.json)"));
  CHECK_THROWS_WITH(CheckpointReader(torn), Contains("is not a complete checkpoint: it has no index.json"));
  // A crash after step 5's folder took its name but before `latest` did: step 5 is whole
  // (the name comes last), and it is the one taken.
  save_two_ranks(dir.path(), 5);
  std::ofstream(s.root / "latest") << "step-2\n";
  CHECK(resolve_checkpoint(s.root) == s.root / "step-5");
  CHECK(resolve_checkpoint(dir.path()) == s.root / "step-5");
}

TEST_CASE("what saves cut short left is cleared: a staging folder removed, a step cut in its re-save put back",
          "[checkpoint]") {
  TempDir dir;
  const Saved s = save_two_ranks(dir.path(), 2);
  save_two_ranks(dir.path(), 3);
  write_rank_shard(begin_staging(s.root, 4), 0, {{"zero.w", {6, 4}, flat(0, 24), s.zero}});  // killed mid-save
  // Step 3 saved again, cut between its two renames: the old copy set aside, the new one not yet named.
  fs::rename(s.root / "step-3", s.root / ".step-3.replaced");
  save_two_ranks(dir.path(), 2);
  fs::create_directory(s.root / ".step-2.replaced");  // cut just after the new step 2 took the name
  std::ofstream(s.root / "latest") << "step-3\n";
  CHECK(resolve_checkpoint(s.root) == s.root / "step-2");  // step 3 looks lost
  const std::vector<std::string> done = tidy_unfinished_saves(s.root);
  REQUIRE(done.size() == 3);
  CHECK(done[0] == concat("removed ", (s.root / ".step-2.replaced").string(), ", step 2's copy that a finished save replaced"));
  CHECK(done[1] == concat("put back ", (s.root / "step-3").string(), " from .step-3.replaced: its re-save stopped before it "
                          "took the name"));
  CHECK(done[2] == concat("removed ", (s.root / ".step-4.partial").string(), ", a save of step 4 that did not finish"));
  CHECK(resolve_checkpoint(s.root) == s.root / "step-3");
  CHECK(read_index(s.root / "step-3").step == 3);
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(s.root)) left.push_back(entry.path().filename().string());
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{"latest", "step-2", "step-3"});
  CHECK(tidy_unfinished_saves(s.root).empty());
}

TEST_CASE("refused: an unknown format version, a tensor whose parts do not cover it", "[checkpoint]") {
  TempDir dir;
  const Saved s = save_two_ranks(dir.path(), 1);
  nlohmann::json j = nlohmann::json::parse(std::ifstream(s.folder / "index.json"));
  j["format_version"] = 2;
  std::ofstream(s.folder / "index.json") << j.dump();
  CHECK_THROWS_WITH(read_index(s.folder),
                    Contains("checkpoint format version 2, but this plait reads version 1"));

  TempDir other;
  CHECK_THROWS_WITH(save_two_ranks(other.path(), 1, /*drop_rank_1_zero_part=*/true),
                    Contains("tensor zero.w's parts hold 10 of its 24 elements"));
}

TEST_CASE("refused: an index whose state resume cannot read, a folder named for another step", "[checkpoint]") {
  TempDir dir;
  const Saved s = save_two_ranks(dir.path(), 4);
  const nlohmann::json good = nlohmann::json::parse(std::ifstream(s.folder / "index.json"));
  auto with = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = good;
    edit(j);
    std::ofstream(s.folder / "index.json") << j.dump();
  };
  with([](nlohmann::json& j) { j["state"].erase("global_batch"); });
  CHECK_THROWS_WITH(read_index(s.folder), Contains("index.json: the checkpoint index is damaged: its \"state\": it lacks "
                                                    "the key 'global_batch'"));
  // A value of the wrong type, a key missing, an index that is no JSON: plait's sentence, the
  // file and the key named, never the JSON library's.
  const auto damaged = [&](const std::string& says) {
    INFO(says);
    CHECK_THROWS_WITH(read_index(s.folder), Contains((s.folder / "index.json").string()) && Contains(says) &&
                                                !Contains("json.exception") && !Contains("type must be") &&
                                                !Contains("syntax error"));
  };
  with([](nlohmann::json& j) { j["step"] = "four"; });
  damaged("the checkpoint index is damaged: its \"step\" holds \"four\" where a whole number belongs");
  // Numbers the JSON library would convert without a word: past int64, or not whole.
  with([](nlohmann::json& j) { j["step"] = 1e300; });
  damaged("the checkpoint index is damaged: its \"step\" holds 1e+300 where a whole number belongs");
  with([](nlohmann::json& j) { j["tokens"] = UINT64_MAX; });
  damaged("the checkpoint index is damaged: its \"tokens\" holds 18446744073709551615 where a whole number belongs");
  with([](nlohmann::json& j) { j["mesh"]["dp"] = 0; });
  damaged("the checkpoint index is damaged: its mesh says dp 0, and a degree is 1 or more");
  with([](nlohmann::json& j) {
    j["tensors"]["zero.w"]["shape"] = nlohmann::json::array({int64_t{1} << 62, int64_t{1} << 62});
  });
  CHECK_THROWS_WITH(read_index(s.folder), Contains("tensor zero.w has a shape no tensor can have (a size of 4611686018427387904)"));
  with([](nlohmann::json& j) { j["mesh"] = nlohmann::json::array({1, 2}); });
  damaged("the checkpoint index is damaged: its \"mesh\": an array stands where an object belongs");
  with([](nlohmann::json& j) { j.erase("plugins"); });
  damaged("the checkpoint index is damaged: it lacks the key \"plugins\"");
  with([](nlohmann::json& j) { j["files"]["rank-0.safetensors"]["bytes"] = nullptr; });
  damaged("the checkpoint index is damaged: its \"files\": a null stands where a number belongs");
  with([](nlohmann::json& j) { j["format_version"] = 1.5; });
  damaged("the checkpoint index is damaged: its \"format_version\" is not a whole number");
  std::ofstream(s.folder / "index.json") << good.dump().substr(0, 40);
  damaged("index.json is not valid JSON: it is damaged at line 1, column 41: ");
  std::ofstream(s.folder / "index.json") << "{\"format\": plait}";
  damaged("index.json is not valid JSON: it is damaged at line 1, column 12: 'p' is not JSON there");
  std::ofstream(s.folder / "index.json") << "{\"format\": \"plait-checkpoint\", \"step\":";
  damaged("index.json is not valid JSON: it is damaged at line 1, column 39: it ends early (cut short)");
  with([](nlohmann::json& j) { j["state"]["trainer"]["step"] = 9; });
  CHECK_THROWS_WITH(read_index(s.folder), Contains("its step is 4 but its trainer state's is 9"));
  with([](nlohmann::json& j) { j["tensors"]["zero.w"]["dtype"] = "F99"; });
  CHECK_THROWS_WITH(read_index(s.folder), Contains("tensor zero.w has dtype 'F99'"));
  with([](nlohmann::json& j) { j["files"]["rank-0.safetensors"]["blocks"] = "00"; });
  CHECK_THROWS_WITH(read_index(s.folder), Contains("the block checksums of rank-0.safetensors do not fit"));
  // What the reader refuses, `plait checkpoint verify` refuses: one reading of the index.
  const ProcessResult verify = run_plait({"checkpoint", "verify", s.folder.string()});
  CHECK(verify.exit_code == 1);
  CHECK_THAT(verify.output, Contains("the block checksums of rank-0.safetensors do not fit"));
  with([](nlohmann::json&) {});
  // The newest folder by name must hold that step: a copy named step-9 is not step 9.
  fs::rename(s.folder, s.root / "step-9");
  CHECK_THROWS_WITH(resolve_checkpoint(s.root), Contains("step-9 holds step 4 (its index.json says so)"));
}

TEST_CASE("keep_last prunes the oldest complete checkpoints and never the latest", "[checkpoint]") {
  TempDir dir;
  for (int64_t step : {1, 2, 3}) save_two_ranks(dir.path(), step);
  prune(dir / "checkpoints", 2);
  CHECK_FALSE(fs::exists(dir / "checkpoints/step-1"));
  CHECK(fs::exists(dir / "checkpoints/step-2"));
  CHECK(resolve_checkpoint(dir / "checkpoints") == dir / "checkpoints/step-3");
  // A run folder resolves to its checkpoints/' newest.
  CHECK(resolve_checkpoint(dir.path()) == dir / "checkpoints/step-3");
}

TEST_CASE("plait checkpoint inspect and verify: what was saved, and a flipped byte named", "[checkpoint]") {
  TempDir dir;
  const Saved s = save_two_ranks(dir.path(), 7);
  ProcessResult shown = run_plait({"checkpoint", "inspect", dir.path().string()});
  INFO(shown.output);
  CHECK(shown.exit_code == 0);
  CHECK_THAT(shown.output, Contains(concat("checkpoint ", s.folder.string(), "\n")) &&
                               Contains("step 7, 0 tokens, 0 samples") && Contains("saved under dp 2 x pp 1 x tp 2") &&
                               Contains("2 tensors in 2 files") && Contains("megatron.w") && Contains("4 x 6"));
  ProcessResult ok = run_plait({"checkpoint", "verify", s.folder.string()});
  CHECK(ok.exit_code == 0);
  CHECK_THAT(ok.output, Contains("2 files, every size and checksum as its index says"));
  {
    std::fstream f(s.folder / "rank-0.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-1, std::ios::end);
    f.put('\x7f');
  }
  ProcessResult bad = run_plait({"checkpoint", "verify", dir.path().string()});
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.output, Contains(concat("error: checkpoint file ", (s.folder / "rank-0.safetensors").string(),
                                         " fails its checksum")));
}

TEST_CASE("a run of a tensor-parallel slice maps to the global tensor's elements, whatever the split", "[checkpoint]") {
  const at::Tensor global = at::arange(6 * 4, at::kFloat).view({6, 4});
  struct Split {
    int64_t dim, parts;
  };
  for (const Split split : {Split{0, 1}, Split{1, 1}, Split{0, 3}, Split{1, 2}}) {
    for (int64_t tp_rank = 0; tp_rank < 2; ++tp_rank) {
      // The local tensor as the tensor plugin makes it: each stacked part sliced alike.
      std::vector<at::Tensor> slices;
      for (const at::Tensor& part : global.chunk(split.parts, split.dim)) slices.push_back(part.chunk(2, split.dim)[tp_rank]);
      const at::Tensor local = at::cat(slices, split.dim).contiguous();
      const LocalLayout layout{local.sizes().vec(), {split.dim, split.parts}, 2, tp_rank};
      CHECK(layout.global_shape() == std::vector<int64_t>{6, 4});
      for (int64_t start = 0; start < 12; start += 5) {
        for (int64_t length : {1, 3, 7}) {
          if (start + length > 12) continue;
          INFO("dim " << split.dim << " parts " << split.parts << " tp rank " << tp_rank << " run " << start << "+" << length);
          const at::Tensor run = local.reshape({-1}).narrow(0, start, length);
          int64_t covered = 0;
          for (const Piece& piece : pieces_of(layout, start, length)) {
            const Region& r = piece.global;
            const at::Tensor expected = r.flat ? global.reshape({-1}).narrow(0, r.start, r.length)
                                               : global.narrow(0, r.offsets[0], r.lengths[0]).narrow(1, r.offsets[1], r.lengths[1]);
            CHECK(at::equal(piece.of(run).reshape(expected.sizes()), expected));
            covered += piece.numel();
          }
          CHECK(covered == length);
        }
      }
    }
  }
}
