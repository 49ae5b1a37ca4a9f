#pragma once
// The values of one config table, already checked by the core against the table's
// schema (type, default, choices). Getters never invent a value: asking for a key the
// schema does not declare, or with the wrong type, is a programming error that names
// table and key. Every value remembers where it was set, so a check made later (by the
// core or a plugin) can start its message at the user's line: where("lr") is
// "configs/run.toml:5:1", "--set train.lr=3e-4", or "configs/run.toml (default)".
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "plait/sdk/error.hpp"

namespace plait {

using OptionValue = std::variant<bool, int64_t, double, std::string, std::vector<std::string>,
                                 std::vector<int64_t>, std::vector<double>>;

class Options {
 public:
  Options() = default;
  Options(std::string table, std::map<std::string, OptionValue> values,
          std::map<std::string, std::string> places = {}, std::map<std::string, bool> defaults = {})
      : table_(std::move(table)), values_(std::move(values)), places_(std::move(places)),
        defaults_(std::move(defaults)) {}

  const std::string& table() const { return table_; }
  bool has(const std::string& key) const { return values_.count(key) != 0; }
  const std::map<std::string, OptionValue>& values() const { return values_; }

  // The value of a key the schema gives a default for, or that must be set.
  template <class T>
  const T& get(const std::string& key) const {
    auto it = values_.find(key);
    if (it == values_.end()) {
      throw Error(concat("[", table_, "] has no value for '", key, "'"),
                  "declare it in the schema with a default, or use find() for optional keys");
    }
    if (const T* v = std::get_if<T>(&it->second)) return *v;
    throw Error(concat("[", table_, "].", key, " was read with the wrong C++ type"),
                "read it with the type its schema declares");
  }

  // Where the key's value came from, for the front of a message; the table's name when
  // nobody recorded it (options built by hand, in tests).
  std::string where(const std::string& key) const {
    auto it = places_.find(key);
    return it == places_.end() ? concat("[", table_, "]") : it->second;
  }
  // True when the value is the schema's default (or follows from defaults only), so a
  // message about two settings can lead with the one the user chose.
  bool is_default(const std::string& key) const {
    auto it = defaults_.find(key);
    return it != defaults_.end() && it->second;
  }

  // The value of an optional key (schema `optional = true`), or nothing when unset.
  template <class T>
  std::optional<T> find(const std::string& key) const {
    if (!has(key)) return std::nullopt;
    return get<T>(key);
  }

 private:
  std::string table_;
  std::map<std::string, OptionValue> values_;
  std::map<std::string, std::string> places_;
  std::map<std::string, bool> defaults_;
};

}  // namespace plait
