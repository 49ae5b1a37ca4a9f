#include "config/config_tree.hpp"

#include <algorithm>

namespace plait {

void ConfigTree::declare_table(const std::string& table, const Source& where) {
  if (tables_.count(table) == 0) {
    order_.push_back(table);
    tables_[table];
  }
  table_sources_.emplace(table, where);
}

void ConfigTree::set(const std::string& table, const std::string& key, ConfigEntry entry) {
  declare_table(table, entry.source);
  tables_[table][key] = std::move(entry);
}

const ConfigEntry* ConfigTree::find(const std::string& table, const std::string& key) const {
  auto t = tables_.find(table);
  if (t == tables_.end()) return nullptr;
  auto e = t->second.find(key);
  return e == t->second.end() ? nullptr : &e->second;
}

const ConfigTable& ConfigTree::table(const std::string& name) const {
  static const ConfigTable empty;
  auto t = tables_.find(name);
  return t == tables_.end() ? empty : t->second;
}

const Source& ConfigTree::table_source(const std::string& name) const {
  static const Source none = Source::from_default();
  auto t = table_sources_.find(name);
  return t == table_sources_.end() ? none : t->second;
}

void ConfigTree::merge_from(const ConfigTree& over) {
  for (const auto& name : over.order_) {
    declare_table(name, over.table_source(name));
    for (const auto& [key, entry] : over.table(name)) tables_[name][key] = entry;
  }
}

}  // namespace plait

namespace plait {

std::string tree_to_toml(const ConfigTree& tree, bool provenance) {
  std::string out;
  for (const auto& name : tree.tables()) {
    if (!name.empty()) out += (out.empty() ? "[" : "\n[") + name + "]\n";
    for (const auto& [key, entry] : tree.table(name)) {
      std::string line = key + " = " + entry.value.to_toml();
      if (provenance) {
        line.resize(std::max<std::size_t>(line.size() + 1, 40), ' ');
        line += "# " + entry.source.describe();
      }
      out += line + "\n";
    }
  }
  return out;
}

}  // namespace plait
