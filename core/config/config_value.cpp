#include "config/config_value.hpp"

#include <charconv>
#include <cmath>
#include <sstream>

#include "util/abbreviate.hpp"

namespace plait {

std::string Source::describe() const {
  switch (kind) {
    case Kind::file: return file + ":" + std::to_string(line) + ":" + std::to_string(column);
    case Kind::flag: return abbreviate(flag);
    case Kind::schema_default: return "default";
  }
  return {};
}

static std::string quote(const std::string& s) {
  std::ostringstream out;
  out << '"';
  for (char c : s) {
    switch (c) {
      case '"': out << "\\\""; break;
      case '\\': out << "\\\\"; break;
      case '\n': out << "\\n"; break;
      case '\t': out << "\\t"; break;
      case '\r': out << "\\r"; break;
      default: out << c;
    }
  }
  out << '"';
  return out.str();
}

static std::string format_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);  // shortest round-trip form
  std::string s(buf, end);
  // TOML needs a '.' or an exponent to read it back as a float.
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

std::string ConfigValue::to_toml() const {
  switch (type) {
    case Type::boolean: return boolean ? "true" : "false";
    case Type::integer: return std::to_string(integer);
    case Type::floating: return format_float(floating);
    case Type::string: return quote(string);
    case Type::array: {
      std::string s = "[";
      for (std::size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + items[i].to_toml();
      return s + "]";
    }
  }
  return {};
}

std::string ConfigValue::shown() const { return abbreviate(to_toml()); }

const char* ConfigValue::type_name(Type t) {
  switch (t) {
    case Type::boolean: return "boolean";
    case Type::integer: return "integer";
    case Type::floating: return "float";
    case Type::string: return "string";
    case Type::array: return "array";
  }
  return "?";
}

}  // namespace plait
