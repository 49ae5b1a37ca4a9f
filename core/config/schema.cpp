#include "config/schema.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <toml++/toml.h>

#include "plait/sdk/error.hpp"
#include "util/abbreviate.hpp"
#include "util/did_you_mean.hpp"
#include "util/short_number.hpp"

namespace plait {
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kTypes = {"bool", "int", "float", "string", "path",
                                         "string[]", "int[]", "float[]", "path[]"};

ConfigValue from_toml(const toml::node& node) {
  if (auto v = node.value_exact<bool>()) return ConfigValue::of(*v);
  if (auto v = node.value_exact<int64_t>()) return ConfigValue::of(*v);
  if (auto v = node.value_exact<double>()) return ConfigValue::of(*v);
  if (auto v = node.value_exact<std::string>()) return ConfigValue::of(*v);
  if (const toml::array* arr = node.as_array()) {
    std::vector<ConfigValue> items;
    for (const auto& item : *arr) items.push_back(from_toml(item));
    return ConfigValue::of(std::move(items));
  }
  throw Error("unsupported value in schema");
}

std::string expected_name(const std::string& type) {
  if (type == "bool") return "a boolean";
  if (type == "int") return "an integer";
  if (type == "float") return "a number";
  if (type == "string") return "a string";
  if (type == "path") return "a path (string)";
  return "an array (" + type + ")";
}

std::string resolve_path(const std::string& raw, const Source& source) {
  fs::path p(raw);
  if (p.is_absolute()) return p.lexically_normal().string();
  fs::path base = source.kind == Source::Kind::file ? fs::absolute(source.file).parent_path() : fs::current_path();
  return (base / p).lexically_normal().string();
}

struct Converter {
  const TableSchema& schema;
  const OptionSpec& spec;
  const Source& source;

  [[noreturn]] void fail(const std::string& what, const std::string& hint) const {
    throw Error(concat(source.describe(), ": [", schema.table, "].", spec.key, ": ", what),
                hint.empty() ? spec.doc : hint);
  }

  [[noreturn]] void wrong_type(const std::string& type, const ConfigValue& v) const {
    const bool element = type != spec.type;
    fail(concat("expected ", expected_name(type), element ? " in the array" : "", ", got ",
                ConfigValue::type_name(v.type), " ", v.shown()),
         concat(spec.key, " (", spec.type, "): ", spec.doc));
  }

  void check_bounds(double x, const ConfigValue& v) const {
    // nan passes every comparison, and no plait option means anything by inf.
    if (!std::isfinite(x)) fail(concat(v.shown(), " is not a finite number"), spec.doc);
    // A bound as the user would write it: 1048576, not 1.04858e+06.
    auto bound = [](double b) { return short_number(b, 15); };
    if (spec.min && x < *spec.min) fail(concat(v.shown(), " is below the minimum ", bound(*spec.min)), spec.doc);
    if (spec.max && x > *spec.max) fail(concat(v.shown(), " is above the maximum ", bound(*spec.max)), spec.doc);
  }

  // Converts one scalar of `type` (element type for arrays). Paths are resolved in place.
  OptionValue scalar(const std::string& type, ConfigValue& v) const {
    using T = ConfigValue::Type;
    if (type == "bool") {
      if (v.type != T::boolean) wrong_type(type, v);
      return v.boolean;
    }
    if (type == "int") {
      if (v.type != T::integer) wrong_type(type, v);
      check_bounds(static_cast<double>(v.integer), v);
      return v.integer;
    }
    if (type == "float") {
      if (v.type == T::integer) v = ConfigValue::of(static_cast<double>(v.integer));
      if (v.type != T::floating) wrong_type(type, v);
      check_bounds(v.floating, v);
      return v.floating;
    }
    if (v.type != T::string) wrong_type(type, v);
    if (type == "path") {
      v.string = resolve_path(v.string, source);
      return v.string;
    }
    if (!spec.choices.empty()) {
      bool ok = std::any_of(spec.choices.begin(), spec.choices.end(),
                            [&](const ConfigValue& c) { return c.type == T::string && c.string == v.string; });
      if (!ok) {
        std::vector<std::string> names;
        std::string list;
        for (const auto& c : spec.choices) {
          names.push_back(c.string);
          list += (list.empty() ? "" : ", ") + c.to_toml();
        }
        fail(concat(v.shown(), " is not one of ", list, did_you_mean(v.string, names)), spec.doc);
      }
    }
    return v.string;
  }

  OptionValue convert(ConfigValue& v) const {
    if (spec.type.size() < 2 || spec.type.substr(spec.type.size() - 2) != "[]") return scalar(spec.type, v);
    if (v.type != ConfigValue::Type::array) wrong_type(spec.type, v);
    const std::string element = spec.type.substr(0, spec.type.size() - 2);
    if (element == "int") {
      std::vector<int64_t> out;
      for (auto& item : v.items) out.push_back(std::get<int64_t>(scalar(element, item)));
      return out;
    }
    if (element == "float") {
      std::vector<double> out;
      for (auto& item : v.items) out.push_back(std::get<double>(scalar(element, item)));
      return out;
    }
    std::vector<std::string> out;
    for (auto& item : v.items) out.push_back(std::get<std::string>(scalar(element, item)));
    return out;
  }
};

}  // namespace

const OptionSpec* TableSchema::find(const std::string& key) const {
  for (const auto& o : options) {
    if (o.key == key) return &o;
  }
  return nullptr;
}

std::vector<std::string> TableSchema::keys() const {
  std::vector<std::string> out;
  for (const auto& o : options) out.push_back(o.key);
  return out;
}

TableSchema parse_schema(std::string_view toml_text, const std::string& table, const std::string& owner) {
  TableSchema schema{table, owner, {}};
  toml::table root;
  try {
    root = toml::parse(toml_text, "schema of " + owner);
  } catch (const toml::parse_error& e) {
    throw Error(concat("the schema of ", owner, " is not valid TOML (line ", e.source().begin.line, "): ",
                       e.description()),
                "fix the plugin's schema.toml and rebuild it");
  }
  for (const auto& [key, node] : root) {
    const std::string name(key.str());
    auto bad = [&](const std::string& what) {
      return Error(concat("the schema of ", owner, ", key '", name, "': ", what),
                   "each key is a table with type, doc and default or optional = true");
    };
    const toml::table* t = node.as_table();
    if (t == nullptr) throw bad("expected a table");
    OptionSpec spec;
    spec.key = name;
    spec.type = t->get("type") ? t->get("type")->value_or(std::string{}) : std::string{};
    if (std::find(kTypes.begin(), kTypes.end(), spec.type) == kTypes.end()) {
      throw bad("type must be one of bool, int, float, string, path, string[], int[], float[], path[]");
    }
    spec.doc = t->get("doc") ? t->get("doc")->value_or(std::string{}) : std::string{};
    if (spec.doc.empty()) throw bad("doc (one line) is required");
    if (const toml::node* d = t->get("default")) spec.default_value = from_toml(*d);
    if (const toml::node* o = t->get("optional")) spec.optional = o->value_or(false);
    if (const toml::node* c = t->get("choices")) spec.choices = from_toml(*c).items;
    if (const toml::node* m = t->get("min")) spec.min = m->value<double>();
    if (const toml::node* m = t->get("max")) spec.max = m->value<double>();
    if (const toml::node* p = t->get("plan")) {
      if (!p->is_array()) throw bad("plan must be an array of the values `plait plan` tries");
      spec.plan = from_toml(*p).items;
    }
    for (const auto& [field, unused] : *t) {
      static const std::vector<std::string> fields = {"type", "doc", "default", "optional", "choices", "min", "max", "plan"};
      if (std::find(fields.begin(), fields.end(), std::string(field.str())) == fields.end()) {
        throw bad(concat("unknown field '", field.str(), "'", did_you_mean(field.str(), fields)));
      }
    }
    schema.options.push_back(std::move(spec));
  }
  // Defaults and the planner's values must satisfy their own schema, or every run (or
  // every plan) would fail on them.
  for (const auto& spec : schema.options) {
    if (spec.default_value) {
      ConfigValue v = *spec.default_value;
      Converter{schema, spec, Source::from_default()}.convert(v);
    }
    for (ConfigValue v : spec.plan) Converter{schema, spec, Source::from_default()}.convert(v);
  }
  return schema;
}

namespace {

[[noreturn]] void unknown_key(const TableSchema& schema, const std::string& key, const Source& source) {
  std::string list;
  for (const auto& k : schema.keys()) list += (list.empty() ? "" : ", ") + k;
  throw Error(concat(source.describe(), ": unknown key '", abbreviate(key), "' in [", schema.table, "]",
                     did_you_mean(key, schema.keys())),
              concat("[", schema.table, "] (", schema.owner, ") accepts: ", list.empty() ? std::string("no keys") : list));
}

}  // namespace

OptionValue check_value(const TableSchema& schema, const std::string& key, ConfigValue value, const Source& source) {
  const OptionSpec* spec = schema.find(key);
  if (spec == nullptr) unknown_key(schema, key, source);
  return Converter{schema, *spec, source}.convert(value);
}

ResolvedTable resolve_table(const TableSchema& schema, const ConfigTable& given, const Source& table_source,
                            const std::string& default_place) {
  for (const auto& [key, entry] : given) {
    if (schema.find(key) == nullptr) unknown_key(schema, key, entry.source);
  }
  ResolvedTable out;
  std::map<std::string, OptionValue> values;
  std::map<std::string, std::string> places;
  std::map<std::string, bool> defaults;
  for (const auto& spec : schema.options) {
    auto it = given.find(spec.key);
    ConfigValue v;
    Source source;
    if (it != given.end()) {
      v = it->second.value;
      source = it->second.source;
    } else if (spec.default_value) {
      v = *spec.default_value;
      source = Source::from_default();
    } else if (spec.optional) {
      continue;
    } else {
      throw Error(concat(table_source.describe(), ": [", schema.table, "] needs '", spec.key, "'"),
                  concat(spec.key, " (", spec.type, "): ", spec.doc));
    }
    values[spec.key] = Converter{schema, spec, source}.convert(v);
    defaults[spec.key] = source.kind == Source::Kind::schema_default;
    places[spec.key] = defaults[spec.key] ? default_place : source.describe();
    out.entries.push_back({spec.key, std::move(v), std::move(source)});
  }
  std::sort(out.entries.begin(), out.entries.end(),
            [](const ResolvedEntry& a, const ResolvedEntry& b) { return a.key < b.key; });
  out.options = Options(schema.table, std::move(values), std::move(places), std::move(defaults));
  return out;
}

}  // namespace plait
