#include <catch2/catch.hpp>

#include "config/config_loader.hpp"
#include "plait/sdk/error.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;

TEST_CASE("a config file's values keep their file, line and column", "[config]") {
  TempDir dir;
  auto file = write_file(dir / "a.toml", "[train]\nlr = 0.5\nsteps = 3\n");
  LoadedConfig c = load_config(file.string(), {});
  const ConfigEntry* lr = c.tree.find("train", "lr");
  REQUIRE(lr != nullptr);
  CHECK(lr->value.type == ConfigValue::Type::floating);
  CHECK(lr->value.floating == 0.5);
  CHECK(lr->source.line == 2);
  CHECK(lr->source.column == 1);
  CHECK_THAT(lr->source.describe(), Contains("a.toml:2:1"));
  CHECK(c.tree.find("train", "steps")->value.integer == 3);
}

TEST_CASE("extends merges bundles first, then the file itself wins", "[config]") {
  TempDir dir;
  write_file(dir / "bundles/base.toml", "[train]\nlr = 0.1\nsteps = 5\n[model]\nsize = \"tiny\"\n");
  write_file(dir / "bundles/fast.toml", "[train]\nsteps = 7\n");
  auto top = write_file(dir / "run.toml", "extends = [\"bundles/base.toml\", \"bundles/fast.toml\"]\n[train]\nlr = 0.3\n");
  LoadedConfig c = load_config(top.string(), {});
  CHECK(c.tree.find("train", "lr")->value.floating == 0.3);
  CHECK(c.tree.find("train", "steps")->value.integer == 7);  // the later bundle wins over the earlier
  CHECK(c.tree.find("model", "size")->value.string == "tiny");
  CHECK_THAT(c.tree.find("train", "steps")->source.describe(), Contains("fast.toml:2:1"));
  REQUIRE(c.files.size() == 3);
}

TEST_CASE("extends paths are relative to the file that names them", "[config]") {
  TempDir dir;
  write_file(dir / "a/b/leaf.toml", "[train]\nseed = 9\n");
  write_file(dir / "a/mid.toml", "extends = \"b/leaf.toml\"\n");
  auto top = write_file(dir / "top.toml", "extends = [\"a/mid.toml\"]\n");
  CHECK(load_config(top.string(), {}).tree.find("train", "seed")->value.integer == 9);
}

TEST_CASE("a missing extends file is an error at the line that names it", "[config]") {
  TempDir dir;
  auto top = write_file(dir / "top.toml", "# comment\nextends = [\"nope.toml\"]\n");
  REQUIRE_THROWS_WITH(load_config(top.string(), {}),
                      Contains("top.toml:2:12") && Contains("extends names a file that does not exist") &&
                          Contains("nope.toml"));
}

TEST_CASE("an extends cycle is refused and the chain is shown", "[config]") {
  TempDir dir;
  write_file(dir / "a.toml", "extends = [\"b.toml\"]\n");
  write_file(dir / "b.toml", "extends = [\"a.toml\"]\n");
  REQUIRE_THROWS_WITH(load_config((dir / "a.toml").string(), {}),
                      Contains("extends cycle") && Contains("a.toml -> ") && Contains("b.toml -> "));
  write_file(dir / "self.toml", "extends = \"self.toml\"\n");
  REQUIRE_THROWS_WITH(load_config((dir / "self.toml").string(), {}), Contains("extends cycle"));
}

TEST_CASE("invalid TOML is reported at file:line:column", "[config]") {
  TempDir dir;
  auto file = write_file(dir / "bad.toml", "[train]\nlr = = 3\n");
  REQUIRE_THROWS_WITH(load_config(file.string(), {}), Contains("bad.toml:2:") && Contains("invalid TOML"));
  REQUIRE_THROWS_WITH(load_config((dir / "missing.toml").string(), {}), Contains("config file not found"));
}

TEST_CASE("extends that lists one file twice is refused, naming both places", "[config]") {
  TempDir dir;
  write_file(dir / "b.toml", "[train]\nlr = 1e-3\n");
  const auto file = write_file(dir / "a.toml", "extends = [\"b.toml\", \"./b.toml\"]\n");
  REQUIRE_THROWS_WITH(load_config(file.string(), {}),
                      Contains("a.toml:1:") && Contains("extends lists b.toml twice (also at ") && Contains("a.toml:1:"));
}

TEST_CASE("invalid TOML is described in plait's words, not the TOML library's", "[config]") {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[model\nfamily = \"gpt2\"\n", "bad.toml:1:7: invalid TOML, in a table header: ']' expected, found the line's end"},
      {"[model]\nfamily = \"gpt2\"\nfamily = \"x\"\n", "bad.toml:3:10: invalid TOML, in a key-value pair: 'family' is defined twice"},
      {"[model]\nfamily = \n", "bad.toml:2:10: invalid TOML, in a key-value pair: value expected, found the line's end"},
      {"[model]\nsize = \"tiny\n", "bad.toml:2:13: invalid TOML, in a string: a string is not closed before the line's end"},
  };
  for (const auto& [text, said] : cases) {
    INFO(text);
    const auto file = write_file(dir / "bad.toml", text);
    try {
      load_config(file.string(), {});
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK_THAT(e.what(), Contains(said) && !Contains("Error while parsing") && !Contains("saw '"));
    }
  }
}

TEST_CASE("nested tables deeper than one level are refused", "[config]") {
  TempDir dir;
  auto file = write_file(dir / "deep.toml", "[model.extra]\nx = 1\n");
  REQUIRE_THROWS_WITH(load_config(file.string(), {}), Contains("deep.toml:1:") && Contains("one level deep"));
}

TEST_CASE("overrides given with --set read TOML values, and bare words as strings", "[config]") {
  TempDir dir;
  auto file = write_file(dir / "a.toml", "[train]\nlr = 0.5\n");
  LoadedConfig c = load_config(file.string(), {"train.lr=1e-3", "model.size=124m", "train.steps=12",
                                               "plugins.paths=[\"x\", \"y\"]", "debug.dump_grads=true"});
  CHECK(c.tree.find("train", "lr")->value.floating == 1e-3);
  CHECK(c.tree.find("train", "lr")->source.describe() == "--set train.lr=1e-3");
  CHECK(c.tree.find("model", "size")->value.string == "124m");
  CHECK(c.tree.find("train", "steps")->value.integer == 12);
  CHECK(c.tree.find("plugins", "paths")->value.items.size() == 2);
  CHECK(c.tree.find("debug", "dump_grads")->value.boolean);
  REQUIRE_THROWS_WITH(load_config(file.string(), {"train.lr"}), Contains("expected table.key=value"));
  REQUIRE_THROWS_WITH(load_config(file.string(), {"lr=3"}), Contains("the key must be table.key"));
  REQUIRE_THROWS_WITH(load_config(file.string(), {"a.b.c=3"}), Contains("the key must be table.key"));
}

TEST_CASE("the merged tree prints as TOML with provenance", "[config]") {
  TempDir dir;
  auto file = write_file(dir / "a.toml", "[train]\nlr = 0.5\n");
  LoadedConfig c = load_config(file.string(), {"train.steps=4"});
  const std::string text = tree_to_toml(c.tree, true);
  CHECK_THAT(text, Contains("[train]") && Contains("lr = 0.5") && Contains("a.toml:2:1") &&
                       Contains("steps = 4") && Contains("# --set train.steps=4"));
}
