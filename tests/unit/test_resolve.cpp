#include <catch2/catch.hpp>

#include "config/config_loader.hpp"
#include "config/resolve.hpp"
#include "plait/sdk/error.hpp"
#include "run/compatibility.hpp"
#include "run/prepare.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;

namespace {

ResolvedConfig resolve_text(const TempDir& dir, const std::string& text, const std::vector<SearchDir>& extra = {}) {
  auto file = write_file(dir / "run.toml", text);
  LoadedConfig loaded = load_config(file.string(), {});
  auto dirs = extra;
  for (const auto& d : config_plugin_dirs(loaded.tree)) dirs.push_back(d);
  PluginRegistry registry = discover_plugins(dirs);
  return resolve_config(loaded.tree, registry);
}

}  // namespace

TEST_CASE("every core table resolves from an empty config with its defaults", "[config]") {
  TempDir dir;
  ResolvedConfig c = resolve_text(dir, "");
  CHECK(c.table("train").get<int64_t>("steps") == 20);
  CHECK(c.table("parallel").get<std::string>("data") == "single");
  REQUIRE(c.plugins().size() == 1);
  CHECK(c.plugins()[0].role == "data");
  CHECK_THAT(c.to_toml(true), Contains("[train]") && Contains("# default") && Contains("[single]"));
}

TEST_CASE("data = \"none\", the single-process strategy's name before API 12, still chooses it, from its line", "[config]") {
  TempDir dir;
  ResolvedConfig c = resolve_text(dir, "[parallel]\ndata = \"none\"\n");
  CHECK(c.table("parallel").get<std::string>("data") == "single");
  CHECK_THAT(c.table("parallel").where("data"), Contains("run.toml:2:1"));
  REQUIRE(c.plugins().size() == 1);
  CHECK(c.plugins()[0].name == "single");
  REQUIRE(c.notes().size() == 1);
  CHECK_THAT(c.notes()[0], Contains("run.toml:2:1: [parallel] data = \"none\" chooses 'single'"));
}

TEST_CASE("an unknown table is refused with a suggestion", "[config]") {
  TempDir dir;
  REQUIRE_THROWS_WITH(resolve_text(dir, "[trian]\nsteps = 3\n"),
                      Contains("run.toml:1:") && Contains("unknown table [trian]") && Contains("did you mean 'train'"));
}

TEST_CASE("a root-level key suggests the table it belongs to", "[config]") {
  TempDir dir;
  REQUIRE_THROWS_WITH(resolve_text(dir, "steps = 3\n"),
                      Contains("run.toml:1:1") && Contains("unknown root-level key 'steps'"));
  try {
    resolve_text(dir, "steps = 3\n");
  } catch (const Error& e) {
    CHECK_THAT(e.hint(), Contains("train.steps"));
  }
}

TEST_CASE("an unknown plugin lists the plugins of that kind that were found", "[config]") {
  TempDir dir;
  REQUIRE_THROWS_WITH(resolve_text(dir, "[parallel]\ndata = \"singel\"\n"),
                      Contains("run.toml:2:1: [parallel].data") && Contains("unknown data plugin 'singel'") &&
                          Contains("did you mean 'single'") && Contains("data plugins found: ddp, fsdp, single, zero"));
}

TEST_CASE("a plugin's table is checked against that plugin's own schema", "[config]") {
  TempDir dir;
  const std::string fixtures = std::string(PLAIT_FIXTURE_DIR) + "/good";
  // The fixture plugin declares `knob`; a typo is an error naming the plugin's table.
  REQUIRE_THROWS_WITH(resolve_text(dir, "[fixture-good]\nknbo = 2\n", {{fixtures, "test"}}),
                      Contains("unknown key 'knbo' in [fixture-good]") && Contains("did you mean 'knob'"));
  ResolvedConfig c = resolve_text(dir, "[parallel]\ndata = \"fixture-good\"\n[fixture-good]\nknob = 4\n",
                                  {{fixtures, "test"}});
  CHECK(c.table("fixture-good").get<int64_t>("knob") == 4);
  // The single-process strategy has no options at all.
  REQUIRE_THROWS_WITH(resolve_text(dir, "[single]\nbucket_cap_mb = 25\n"), Contains("unknown key 'bucket_cap_mb' in [single]"));
}

TEST_CASE("plugin paths in a config resolve against that config's folder", "[config]") {
  TempDir dir;
  write_file(dir / "sub/bundle.toml", "[plugins]\npaths = [\"../plugins_here\"]\n");
  auto file = write_file(dir / "run.toml", "extends = [\"sub/bundle.toml\"]\n");
  LoadedConfig loaded = load_config(file.string(), {});
  auto dirs = config_plugin_dirs(loaded.tree);
  REQUIRE(dirs.size() == 1);
  CHECK(dirs[0].path == (dir / "plugins_here").lexically_normal().string());
  CHECK_THAT(dirs[0].origin, Contains("bundle.toml:2:1"));
  REQUIRE_THROWS_WITH(discover_plugins(dirs), Contains("plugin folder does not exist"));
}

TEST_CASE("a combination the data plugin does not support is refused before launch", "[config]") {
  TempDir dir;
  const std::string fixtures = std::string(PLAIT_FIXTURE_DIR) + "/good";
  write_file(dir / "p.toml", concat("[plugins]\npaths = [\"", fixtures, "\"]\n[parallel]\ndata = \"fixture-good\"\n",
                                    "[train]\ngrad_accum = 2\n"));
  REQUIRE_THROWS_WITH(prepare_run((dir / "p.toml").string(), {}),
                      Contains("p.toml:4:1") && Contains("data plugin 'fixture-good' cannot be combined with "
                                                         "train.grad_accum = 2") &&
                          Contains("lacks the capability 'grad_accum'"));
  // bf16 it declares, so that combination passes.
  CHECK_NOTHROW(prepare_run((dir / "p.toml").string(), {"train.grad_accum=1", "train.dtype=bfloat16"}));
  REQUIRE_THROWS_WITH(prepare_run((dir / "p.toml").string(), {"train.grad_accum=1", "train.dtype=float64"}),
                      Contains("lacks the capability 'float64'"));
}
