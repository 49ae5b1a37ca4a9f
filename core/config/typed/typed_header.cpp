#include "config/typed/typed_header.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>
#include <sstream>

#include "plait/sdk/error.hpp"

namespace plait {
namespace {

const std::set<std::string>& keywords() {
  static const std::set<std::string> words = {
      "alignas", "alignof", "and", "asm", "auto", "bool", "break", "case", "catch", "char", "class", "const",
      "constexpr", "continue", "default", "delete", "do", "double", "else", "enum", "explicit", "export", "extern",
      "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new",
      "noexcept", "not", "nullptr", "operator", "or", "private", "protected", "public", "register", "return",
      "short", "signed", "sizeof", "static", "struct", "switch", "template", "this", "throw", "true", "try",
      "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void", "volatile", "while", "xor",
      "concept", "requires", "co_await", "co_return", "co_yield", "char8_t", "consteval", "constinit"};
  return words;
}

bool is_enum(const OptionSpec& o) { return o.type == "string" && !o.choices.empty(); }

// `s` as a C string literal on one line.
std::string cpp_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".einn") == std::string::npos) s += ".0";  // a double literal
  return s;
}

// The field's C++ type, before std::optional.
std::string value_type(const OptionSpec& o) {
  if (is_enum(o)) return type_name_of(o.key);
  if (o.type == "bool") return "bool";
  if (o.type == "int") return "int64_t";
  if (o.type == "float") return "double";
  if (o.type == "string" || o.type == "path") return "std::string";
  if (o.type == "int[]") return "std::vector<int64_t>";
  if (o.type == "float[]") return "std::vector<double>";
  return "std::vector<std::string>";  // string[], path[]
}

// The type Options stores the value as (an enum is read as its string).
std::string stored_type(const OptionSpec& o) { return is_enum(o) ? "std::string" : value_type(o); }

std::string literal(const OptionSpec& o, const ConfigValue& v) {
  if (is_enum(o)) return type_name_of(o.key) + "::" + identifier_of(v.string);
  switch (v.type) {
    case ConfigValue::Type::boolean: return v.boolean ? "true" : "false";
    case ConfigValue::Type::integer:
      return o.type == "float" ? number(static_cast<double>(v.integer)) : std::to_string(v.integer);
    case ConfigValue::Type::floating: return number(v.floating);
    case ConfigValue::Type::string: return cpp_string(v.string);
    case ConfigValue::Type::array: {
      std::string out = "{";
      for (std::size_t i = 0; i < v.items.size(); ++i) out += (i ? ", " : "") + literal(o, v.items[i]);
      return out + "}";
    }
  }
  return "{}";
}

// The doc's first sentence, on one comment line.
std::string summary(const std::string& doc) {
  std::string s = doc.substr(0, doc.find(". ") == std::string::npos ? doc.size() : doc.find(". ") + 1);
  std::replace(s.begin(), s.end(), '\n', ' ');
  if (s.size() > 110) s = s.substr(0, 107) + "...";
  return s;
}

void write_enum(std::ostringstream& h, const OptionSpec& o, const std::string& table) {
  const std::string type = type_name_of(o.key);
  std::set<std::string> seen;
  h << "  enum class " << type << " : uint8_t {";
  for (std::size_t i = 0; i < o.choices.size(); ++i) {
    const std::string id = identifier_of(o.choices[i].string);
    PLAIT_CHECK(seen.insert(id).second,
                concat("[", table, "].", o.key, ": the choices '", o.choices[i].string, "' and another both name ", id,
                       " in C++"),
                "choices must differ in their letters and digits");
    h << (i ? ", " : " ") << id;
  }
  h << " };\n";
  h << "  static const char* name(" << type << " v) {\n    switch (v) {\n";
  for (const auto& c : o.choices) h << "      case " << type << "::" << identifier_of(c.string) << ": return " << cpp_string(c.string) << ";\n";
  h << "    }\n    return \"\";\n  }\n";
  h << "  static " << type << " " << identifier_of(o.key) << "_of(const std::string& s) {\n";
  for (const auto& c : o.choices) h << "    if (s == " << cpp_string(c.string) << ") return " << type << "::" << identifier_of(c.string) << ";\n";
  h << "    throw plait::Error(\"[" << table << "]." << o.key << ": '\" + s + \"' is not one of its choices\", \"\");\n  }\n";
}

void write_from(std::ostringstream& h, const TableSchema& schema, const std::string& name) {
  h << "\n  // From the validated table (every key typed as the schema says, defaults filled).\n";
  h << "  static " << name << " from(const plait::Options& o) {\n    " << name << " s;\n";
  for (const auto& o : schema.options) {
    const std::string field = identifier_of(o.key);
    const std::string key = cpp_string(o.key);
    if (is_enum(o) && o.optional) {
      h << "    if (auto v = o.find<std::string>(" << key << ")) s." << field << " = " << field << "_of(*v);\n";
    } else if (is_enum(o)) {
      h << "    s." << field << " = " << field << "_of(o.get<std::string>(" << key << "));\n";
    } else if (o.optional) {
      h << "    s." << field << " = o.find<" << stored_type(o) << ">(" << key << ");\n";
    } else {
      h << "    s." << field << " = o.get<" << stored_type(o) << ">(" << key << ");\n";
    }
  }
  h << "    return s;\n  }\n";
}

}  // namespace

std::string generated_header(const std::string& schema_text, const std::string& table, const TypedNames& names,
                             std::string& refused) {
  try {
    return typed_header(parse_schema(schema_text, table, names.schema_file), names);
  } catch (const Error& e) {
    refused = e.what();
    return "// generated by plait-schema-gen from " + names.schema_file + ": the schema is refused\n#error " +
           cpp_string(refused) + "\n";
  }
}

std::string identifier_of(const std::string& text) {
  std::string id;
  for (char c : text) id += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (id.empty() || std::isdigit(static_cast<unsigned char>(id[0]))) id = "_" + id;
  if (keywords().count(id) != 0) id += "_";
  return id;
}

std::string type_name_of(const std::string& key) {
  std::string out;
  bool upper = true;
  for (char c : key) {
    if (!std::isalnum(static_cast<unsigned char>(c))) {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out.empty() || std::isdigit(static_cast<unsigned char>(out[0])) ? "T" + out : out;
}

std::string typed_header(const TableSchema& schema, const TypedNames& names) {
  std::ostringstream h;
  h << "// generated by plait-schema-gen from " << names.schema_file << " ([" << schema.table << "]): do not edit\n";
  h << "#pragma once\n#include <cstdint>\n#include <optional>\n#include <string>\n#include <vector>\n\n";
  h << "#include \"plait/sdk/error.hpp\"\n#include \"plait/sdk/options.hpp\"\n\n";
  h << "namespace " << names.name_space << " {\n\n";
  h << "struct " << names.struct_name << " {\n";
  for (const auto& o : schema.options) {
    if (is_enum(o)) write_enum(h, o, schema.table);
  }
  for (const auto& o : schema.options) {
    h << "  // " << summary(o.doc) << "\n";
    const std::string type = value_type(o);
    h << "  " << (o.optional ? "std::optional<" + type + ">" : type) << " " << identifier_of(o.key);
    if (o.default_value) h << " = " << literal(o, *o.default_value);
    else if (!o.optional) h << "{}";
    h << ";\n";
  }
  write_from(h, schema, names.struct_name);
  h << "};\n\n}  // namespace " << names.name_space << "\n";
  return h.str();
}

}  // namespace plait
