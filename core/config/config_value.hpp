#pragma once
// A config value as written (before any schema has given it a type), and where it came
// from, so every error and `config show --provenance` can point at the line.
#include <cstdint>
#include <string>
#include <vector>

namespace plait {

struct Source {
  enum class Kind { file, flag, schema_default };
  Kind kind = Kind::file;
  std::string file;  // for file
  int line = 0;
  int column = 0;
  std::string flag;  // for flag: the whole "--set key=value"

  static Source in_file(std::string file, int line, int column) {
    return {Kind::file, std::move(file), line, column, {}};
  }
  static Source from_flag(std::string flag) { return {Kind::flag, {}, 0, 0, std::move(flag)}; }
  static Source from_default() { return {Kind::schema_default, {}, 0, 0, {}}; }

  // "configs/a.toml:3:1", "--set train.lr=0.1" (abbreviated) or "default".
  std::string describe() const;
};

struct ConfigValue {
  enum class Type { boolean, integer, floating, string, array };
  Type type = Type::string;
  bool boolean = false;
  int64_t integer = 0;
  double floating = 0.0;
  std::string string;
  std::vector<ConfigValue> items;

  static ConfigValue of(bool v) { ConfigValue c; c.type = Type::boolean; c.boolean = v; return c; }
  static ConfigValue of(int64_t v) { ConfigValue c; c.type = Type::integer; c.integer = v; return c; }
  static ConfigValue of(double v) { ConfigValue c; c.type = Type::floating; c.floating = v; return c; }
  static ConfigValue of(std::string v) { ConfigValue c; c.type = Type::string; c.string = std::move(v); return c; }
  static ConfigValue of(std::vector<ConfigValue> v) { ConfigValue c; c.type = Type::array; c.items = std::move(v); return c; }

  // As TOML: 1, 2.5, true, "text", [1, 2].
  std::string to_toml() const;
  // As TOML, abbreviated for a message (a 100 kB string is not echoed whole).
  std::string shown() const;
  // "integer", "string", ...
  static const char* type_name(Type t);
};

}  // namespace plait
