#include <catch2/catch.hpp>

#include "config/schema.hpp"
#include "plait/sdk/error.hpp"

using namespace plait;
using Catch::Matchers::Contains;

namespace {

const char* kSchema = R"(
[steps]
type = "int"
default = 10
min = 1
doc = "Optimizer steps."

[lr]
type = "float"
default = 0.1
doc = "Learning rate."

[order]
type = "string"
default = "random"
choices = ["random", "sequential"]
doc = "Batch order."

[path]
type = "path"
optional = true
doc = "A file."

[name]
type = "string"
doc = "Required name."

[ids]
type = "int[]"
default = []
doc = "Some integers."
)";

ConfigTable table(std::initializer_list<std::pair<std::string, ConfigValue>> values) {
  ConfigTable t;
  int line = 1;
  for (const auto& [k, v] : values) t[k] = {v, Source::in_file("/cfg/run.toml", ++line, 1)};
  return t;
}

const Source kTableSource = Source::in_file("/cfg/run.toml", 1, 1);

}  // namespace

TEST_CASE("a schema fills defaults and converts values", "[config]") {
  TableSchema s = parse_schema(kSchema, "demo", "core");
  ResolvedTable r = resolve_table(s, table({{"name", ConfigValue::of(std::string("x"))},
                                            {"lr", ConfigValue::of(int64_t{2})}}),
                                  kTableSource);
  CHECK(r.options.get<int64_t>("steps") == 10);
  CHECK(r.options.get<double>("lr") == 2.0);  // an integer is a valid float
  CHECK(r.options.get<std::string>("order") == "random");
  CHECK_FALSE(r.options.has("path"));  // optional and unset
  CHECK(r.options.get<std::string>("name") == "x");
  bool default_noted = false;
  for (const auto& e : r.entries) {
    if (e.key == "steps") default_noted = e.source.kind == Source::Kind::schema_default;
  }
  CHECK(default_noted);
}

TEST_CASE("an unknown key names file:line:column and suggests the closest key", "[config]") {
  TableSchema s = parse_schema(kSchema, "demo", "core");
  REQUIRE_THROWS_WITH(resolve_table(s, table({{"name", ConfigValue::of(std::string("x"))},
                                              {"setps", ConfigValue::of(int64_t{3})}}),
                                    kTableSource),
                      Contains("/cfg/run.toml:3:1") && Contains("unknown key 'setps' in [demo]") &&
                          Contains("did you mean 'steps'?"));
}

TEST_CASE("a wrong type says what was expected and what was found", "[config]") {
  TableSchema s = parse_schema(kSchema, "demo", "core");
  REQUIRE_THROWS_WITH(resolve_table(s, table({{"name", ConfigValue::of(std::string("x"))},
                                              {"steps", ConfigValue::of(std::string("ten"))}}),
                                    kTableSource),
                      Contains("/cfg/run.toml:3:1") && Contains("[demo].steps") &&
                          Contains("expected an integer, got string \"ten\""));
  REQUIRE_THROWS_WITH(resolve_table(s, table({{"name", ConfigValue::of(std::string("x"))},
                                              {"ids", ConfigValue::of(std::vector<ConfigValue>{
                                                          ConfigValue::of(int64_t{1}), ConfigValue::of(true)})}}),
                                    kTableSource),
                      Contains("expected an integer in the array, got boolean true"));
}

TEST_CASE("choices and bounds are enforced", "[config]") {
  TableSchema s = parse_schema(kSchema, "demo", "core");
  REQUIRE_THROWS_WITH(resolve_table(s, table({{"name", ConfigValue::of(std::string("x"))},
                                              {"order", ConfigValue::of(std::string("sequentail"))}}),
                                    kTableSource),
                      Contains("is not one of \"random\", \"sequential\"") && Contains("did you mean 'sequential'"));
  REQUIRE_THROWS_WITH(resolve_table(s, table({{"name", ConfigValue::of(std::string("x"))},
                                              {"steps", ConfigValue::of(int64_t{0})}}),
                                    kTableSource),
                      Contains("below the minimum 1"));
}

TEST_CASE("a required key that is missing is named with its doc", "[config]") {
  TableSchema s = parse_schema(kSchema, "demo", "core");
  REQUIRE_THROWS_WITH(resolve_table(s, {}, kTableSource),
                      Contains("[demo] needs 'name'"));
}

TEST_CASE("paths resolve against the file that set them", "[config]") {
  TableSchema s = parse_schema(kSchema, "demo", "core");
  ResolvedTable r = resolve_table(s, table({{"name", ConfigValue::of(std::string("x"))},
                                            {"path", ConfigValue::of(std::string("data/train.bin"))}}),
                                  kTableSource);
  CHECK(r.options.get<std::string>("path") == "/cfg/data/train.bin");
}

TEST_CASE("a malformed schema is an error naming its owner", "[config]") {
  CHECK_THROWS_WITH(parse_schema("[x]\ntype = \"integer\"\ndoc = \"d\"\n", "t", "plugin 'p'"),
                    Contains("plugin 'p'") && Contains("type must be one of"));
  CHECK_THROWS_WITH(parse_schema("[x]\ntype = \"int\"\n", "t", "plugin 'p'"), Contains("doc (one line) is required"));
  CHECK_THROWS_WITH(parse_schema("[x]\ntype = \"int\"\ndoc = \"d\"\ndefualt = 3\n", "t", "plugin 'p'"),
                    Contains("unknown field 'defualt'") && Contains("did you mean 'default'"));
  CHECK_THROWS_WITH(parse_schema("[x]\ntype = \"int\"\ndoc = \"d\"\ndefault = \"three\"\n", "t", "plugin 'p'"),
                    Contains("expected an integer"));
  CHECK_THROWS_WITH(parse_schema("[x\n", "t", "plugin 'p'"), Contains("not valid TOML"));
}
