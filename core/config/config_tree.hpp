#pragma once
// A config as merged from files, bundles and --set flags: tables of keys, each value
// with its source. Tables are one level deep ([train] lr = ...); root-level keys live in
// the table named "".
#include <map>
#include <string>
#include <vector>

#include "config/config_value.hpp"

namespace plait {

struct ConfigEntry {
  ConfigValue value;
  Source source;
};

using ConfigTable = std::map<std::string, ConfigEntry>;

class ConfigTree {
 public:
  // Records where a table was first written (for "unknown table" errors).
  void declare_table(const std::string& table, const Source& where);
  void set(const std::string& table, const std::string& key, ConfigEntry entry);
  const ConfigEntry* find(const std::string& table, const std::string& key) const;

  // Tables in the order they first appeared.
  const std::vector<std::string>& tables() const { return order_; }
  const ConfigTable& table(const std::string& name) const;
  const Source& table_source(const std::string& name) const;

  // Every value of `over` replaces ours; arrays are replaced, not appended.
  void merge_from(const ConfigTree& over);

  // The config file named on the command line, as shown in messages: where a value
  // that nobody set (a default) is said to come from.
  void set_main_file(std::string shown) { main_file_ = std::move(shown); }
  std::string default_place() const { return main_file_.empty() ? "default" : main_file_ + " (default)"; }
  // Whether `source` is the user's own word: the main config file or a flag, not a bundle.
  bool set_by_user(const Source& source) const {
    return source.kind == Source::Kind::flag || (source.kind == Source::Kind::file && source.file == main_file_);
  }

 private:
  std::vector<std::string> order_;
  std::map<std::string, ConfigTable> tables_;
  std::map<std::string, Source> table_sources_;
  std::string main_file_;
};

}  // namespace plait

namespace plait {

// The values as given (no defaults), as TOML; with provenance, each line says where
// its value came from.
std::string tree_to_toml(const ConfigTree& tree, bool provenance);

}  // namespace plait
