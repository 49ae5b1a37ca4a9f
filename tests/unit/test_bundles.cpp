// Bundles by name: `extends` finds a name on the bundle path (built-in, then
// PLAIT_BUNDLE_PATH, then [bundles] paths), an unknown name is refused with where it
// was looked for, `plait bundles` lists what each sets, the lock file records every
// bundle with its checksum, and every shipped bundle runs as given on a small model.
#include <catch2/catch.hpp>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint_files.hpp"
#include "config/config_loader.hpp"
#include "plait/sdk/error.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

// PLAIT_BUNDLE_PATH for one scope.
struct BundlePathEnv {
  explicit BundlePathEnv(const std::string& value) { ::setenv("PLAIT_BUNDLE_PATH", value.c_str(), 1); }
  ~BundlePathEnv() { ::unsetenv("PLAIT_BUNDLE_PATH"); }
};

std::string value_of(const LoadedConfig& c, const std::string& table, const std::string& key) {
  return c.tree.find(table, key)->value.to_toml();
}

}  // namespace

TEST_CASE("extends names a built-in bundle, and a team's folder can shadow it", "[config][bundles]") {
  TempDir dir;
  const auto top = write_file(dir / "run.toml", "extends = [\"bf16-mixed\"]\n[train]\nlr = 0.1\n");
  LoadedConfig c = load_config(top.string(), {});
  CHECK(value_of(c, "train", "dtype") == "\"bfloat16\"");
  REQUIRE(c.files.size() == 2);
  CHECK(fs::path(c.files[0]).filename() == "bf16-mixed.toml");

  // The built-in folder comes first; a name only the team has is found in its folder,
  // first through PLAIT_BUNDLE_PATH, then through [bundles] paths.
  write_file(dir / "team/house-lr.toml", "# our lr\n[train]\nlr = 0.25\n");
  write_file(dir / "other/house-lr.toml", "[train]\nlr = 0.5\n");
  const auto named = write_file(dir / "named.toml", "extends = \"house-lr\"\n[bundles]\npaths = [\"other\"]\n");
  CHECK(value_of(load_config(named.string(), {}), "train", "lr") == "0.5");
  {
    BundlePathEnv env((dir / "team").string());
    CHECK(value_of(load_config(named.string(), {}), "train", "lr") == "0.25");
  }
}

TEST_CASE("a bundle others could change is refused as a plugin is, and a file extends reaches that is not TOML is "
          "not echoed",
          "[config][bundles]") {
  TempDir dir;
  const auto refusal = [](const fs::path& config) {
    try {
      load_config(config.string(), {});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // A world-writable bundle file, then one in a world-writable folder, by path and by name.
  const auto bundle = write_file(dir / "mine/lr.toml", "[train]\nlr = 0.25\n");
  const auto by_path = write_file(dir / "by-path.toml", "extends = [\"mine/lr.toml\"]\n");
  CHECK(refusal(by_path).empty());
  fs::permissions(bundle, fs::perms::others_write, fs::perm_options::add);
  CHECK_THAT(refusal(by_path), Contains("by-path.toml:1:") && Contains("extends names ") &&
                                   Contains("lr.toml, which is not read: the file can be written by others (mode 646), so "
                                            "anyone could change this job's settings; chmod go-w "));
  fs::permissions(bundle, fs::perms::others_write, fs::perm_options::remove);
  fs::permissions(dir / "mine", fs::perms::group_write, fs::perm_options::add);
  const auto by_name = write_file(dir / "by-name.toml", "extends = \"lr\"\n[bundles]\npaths = [\"mine\"]\n");
  CHECK_THAT(refusal(by_name), Contains("which is not read: its folder ") && Contains("can be written by others (mode 775)"));
  fs::permissions(dir / "mine", fs::perms::group_write, fs::perm_options::remove);
  CHECK(refusal(by_name).empty());
  // Any path is followed, but a file that is not TOML is not quoted back.
  write_file(dir / "secret.txt", "token-XYZ987 stays private\n");
  const auto reaching = write_file(dir / "reaching.toml", "extends = [\"secret.txt\"]\n");
  const std::string said = refusal(reaching);
  CHECK_THAT(said, Contains("secret.txt:1:") && Contains("not a valid TOML file") && !Contains("'s'") &&
                       !Contains("token") && !Contains("XYZ"));
}

TEST_CASE("a bundle name on no folder of the path is refused, naming where it looked", "[config][bundles]") {
  TempDir dir;
  const auto top = write_file(dir / "run.toml", "[model]\nsize = \"tiny\"\n");
  const auto missing = write_file(dir / "missing.toml", "extends = [\"zero9-offload\"]\n");
  try {
    load_config(missing.string(), {});
    FAIL("loaded");
  } catch (const Error& e) {
    CHECK_THAT(std::string(e.what()), StartsWith(dir.path().string() + "/missing.toml:1:12: extends names the bundle "
                                                 "'zero9-offload', which is in none of "));
    CHECK(e.hint().find("`plait bundles` lists the bundles") == 0);
  }
  const auto bad_path = write_file(dir / "bad.toml", "[bundles]\npaths = [\"nowhere\"]\n");
  CHECK_THROWS_WITH(load_config(bad_path.string(), {}),
                    dir.path().string() + "/bad.toml:2:10: bundles.paths names " + (dir / "nowhere").string() +
                        ", which is not a folder");
  BundlePathEnv env((dir / "nowhere").string());
  CHECK_THROWS_WITH(load_config(top.string(), {}),
                    "PLAIT_BUNDLE_PATH names " + (dir / "nowhere").string() + ", which is not a folder");
}

TEST_CASE("[bundles] paths only where it takes effect: not in a bundle, not through --set", "[config][bundles]") {
  TempDir dir;
  fs::create_directories(dir / "team");
  write_file(dir / "base.toml", "[train]\nlr = 0.5\n[bundles]\npaths = [\"team\"]\n");
  const auto top = write_file(dir / "run.toml", "extends = [\"base.toml\"]\n");
  CHECK_THROWS_WITH(load_config(top.string(), {}),
                    StartsWith(dir.path().string() + "/base.toml:4:") &&
                        Contains(": [bundles] paths in a bundle has no effect"));
  const auto plain = write_file(dir / "plain.toml", "[train]\nlr = 0.5\n");
  CHECK_THROWS_WITH(load_config(plain.string(), {"bundles.paths=[\"team\"]"}),
                    StartsWith("--set bundles.paths=[\"team\"]: [bundles] paths cannot be set with --set"));
}

TEST_CASE("a plugin table no role uses: a bundle's is noted, the config's adapter table refused, others noted",
          "[config][bundles]") {
  TempDir dir;
  write_file(dir / "tune.toml", "[lora]\nrank = 4\n");
  const auto extends = write_file(dir / "run.toml", "extends = [\"tune.toml\"]\n[train]\nsteps = 1\n");
  const ProcessResult bundle = run_plait({"config", "validate", extends.string()});
  INFO(bundle.output);
  CHECK(bundle.exit_code == 0);
  CHECK_THAT(bundle.output, Contains((dir / "tune.toml").string() + ":2:1: [lora] rank is set, but adapter plugin 'lora' "
                                     "plays no role in [parallel]: its options do nothing in this run"));
  const auto own = write_file(dir / "own.toml", "extends = [\"tune.toml\"]\n[lora]\nalpha = 8.0\n");
  const ProcessResult refused = run_plait({"config", "validate", own.string()});
  INFO(refused.output);
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.output, StartsWith("error: " + own.string() + ":3:1: [lora] alpha is set, but the run trains no adapter"));
  const auto zero = write_file(dir / "zero.toml", "[parallel]\ndata = \"ddp\"\n[zero]\nstage = 3\n");
  const ProcessResult noted = run_plait({"config", "validate", zero.string()});
  INFO(noted.output);
  CHECK(noted.exit_code == 0);
  CHECK_THAT(noted.output, Contains(zero.string() + ":4:1: [zero] stage is set, but data plugin 'zero' plays no role in "
                                    "[parallel]: its options do nothing in this run"));
}

TEST_CASE("plait bundles lists every bundle with its description and keys", "[cli][bundles]") {
  TempDir dir;
  write_file(dir / "team/house-lr.toml", "# Our house learning rate.\n[train]\nlr = 0.25\n");
  const ProcessResult r = run_plait({"bundles", "--json"}, {{"PLAIT_BUNDLE_PATH", (dir / "team").string()}});
  REQUIRE(r.exit_code == 0);
  const auto out = nlohmann::json::parse(r.output);
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& b : out.at("bundles")) by_name[b.at("name").get<std::string>()] = b;
  for (const char* shipped : {"zero3-offload", "3d-megatron", "hsdp-multinode", "bf16-mixed", "nanogpt-adamw"}) {
    INFO(shipped);
    REQUIRE(by_name.count(shipped) == 1);
    CHECK(by_name[shipped].at("origin") == "built-in");
    CHECK(by_name[shipped].at("description").get<std::string>().size() > 20);
  }
  CHECK(by_name["zero3-offload"].at("sets") ==
        nlohmann::json::array({"cpu.params", "parallel.data", "parallel.offload", "train.activation_checkpointing",
                               "zero.stage"}));
  CHECK(by_name["house-lr"].at("description") == "Our house learning rate.");
  CHECK(by_name["house-lr"].at("origin") == "PLAIT_BUNDLE_PATH");
  CHECK(by_name["house-lr"].at("sets") == nlohmann::json::array({"train.lr"}));
}

// Each shipped bundle on the quickstart's tiny model (4 blocks, so that interleaved 1F1B
// has a block per virtual stage), as the bundle gives its mesh: 3 steps, and the lock
// file names the bundles read with their checksums.
TEST_CASE("every shipped bundle runs as given on a small model", "[bundles][run]") {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"zero3-offload", {}},
      {"3d-megatron", {}},
      {"bf16-mixed", {}},
      {"nanogpt-adamw", {}},
      // Its two machines of 8 (dp 16) on this one: shards of 8, replicated twice.
      {"hsdp-multinode", {"data.micro_batch_size=1"}},
  };
  for (const auto& [bundle, sets] : cases) {
    DYNAMIC_SECTION(bundle) {
      TempDir dir;
      const auto config = write_file(dir / "run.toml", "extends = [\"" + source_path("configs/quickstart.toml") +
                                                           "\", \"" + bundle + "\"]\n[model]\nn_layer = 4\n");
      std::vector<std::string> args = {"run", config.string(), "--steps", "3", "--out", (dir / "out").string()};
      for (const auto& s : sets) args.insert(args.end(), {"--set", s});
      const ProcessResult r = run_plait(args);
      INFO(r.output);
      REQUIRE(r.exit_code == 0);
      CHECK(read_metrics(dir / "out").size() == 3);
      const std::string lock = read_file(dir / "out/config.lock.toml");
      const std::string file = std::string(PLAIT_BUILD_DIR) + "/share/plait/bundles/" + bundle + ".toml";
      const std::string listed = "bundles = [\"" + source_path("configs/quickstart.toml") + "\", \"" + file + "\"]";
      CHECK(lock.find(listed) != std::string::npos);
      CHECK(lock.find("bundle_xxh3 = [\"" + checkpoint::file_xxh3(source_path("configs/quickstart.toml")) + "\", \"" +
                      checkpoint::file_xxh3(file) + "\"]") != std::string::npos);
    }
  }
}
