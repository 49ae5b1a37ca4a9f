#include "config/config_loader.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include <regex>

#include <toml++/toml.h>

#include "config/bundle_path.hpp"
#include "plait/sdk/error.hpp"
#include "util/toml_problem.hpp"
#include "util/others_can_write.hpp"
#include "util/abbreviate.hpp"

namespace plait {
namespace fs = std::filesystem;

namespace {

Source source_of(const toml::source_region& region, const std::string& file) {
  return Source::in_file(file, static_cast<int>(region.begin.line), static_cast<int>(region.begin.column));
}

ConfigValue to_value(const toml::node& node, const std::string& where) {
  switch (node.type()) {
    case toml::node_type::boolean: return ConfigValue::of(*node.value<bool>());
    case toml::node_type::integer: return ConfigValue::of(*node.value<int64_t>());
    case toml::node_type::floating_point: return ConfigValue::of(*node.value<double>());
    case toml::node_type::string: return ConfigValue::of(*node.value<std::string>());
    case toml::node_type::array: {
      std::vector<ConfigValue> items;
      for (const auto& item : *node.as_array()) items.push_back(to_value(item, where));
      return ConfigValue::of(std::move(items));
    }
    case toml::node_type::table:
      throw Error(where + ": nested tables are not part of any plait schema: tables are one level deep",
                  "write [table] then key = value");
    default:
      throw Error(where + ": dates and times are not accepted in plait configs",
                  "write the value as a string or a number");
  }
}

std::string display_path(const fs::path& p) {
  std::error_code ec;
  fs::path rel = fs::relative(p, fs::current_path(), ec);
  if (!ec && !rel.empty() && rel.native().rfind("..", 0) != 0) return rel.string();
  return p.string();
}

// toml++'s sentence quotes what it found ("saw 'h'"): from a file reached through extends,
// which may be any file at all (a path is followed wherever it leads), that is the file's
// content, and it is not echoed.
toml::table parse_or_throw(const fs::path& path, const std::string& shown, bool reached_by_extends) {
  try {
    return toml::parse_file(path.string());
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    const std::string description(e.description());
    throw Error(concat(shown, ":", where.line, ":", where.column,
                       reached_by_extends ? ": not a valid TOML file, at " : ": invalid TOML, in ",
                       toml_problem(description, reached_by_extends)),
                reached_by_extends ? "extends takes TOML files (bundles); check the path, or fix the syntax at that position"
                                   : "fix the syntax at that position (TOML reference: https://toml.io)");
  }
}

// Collects `extends` entries as (absolute path, where it was written): a path relative
// to the file, or a bundle's name looked for on the bundle path.
std::vector<std::pair<fs::path, Source>> extends_of(const toml::table& root, const fs::path& file,
                                                    const std::string& shown, const std::vector<BundleDir>& dirs) {
  std::vector<std::pair<fs::path, Source>> out;
  const toml::node* node = root.get("extends");
  if (node == nullptr) return out;
  auto add = [&](const toml::node& item) {
    Source where = source_of(item.source(), shown);
    if (!item.is_string()) {
      throw Error(where.describe() + ": extends takes file names (strings)",
                  "write extends = [\"bundle.toml\", ...]");
    }
    const std::string entry = *item.value<std::string>();
    std::error_code ec;
    // A bare name is a bundle's unless something by that name sits beside the file.
    if (is_bundle_name(entry) && !fs::exists(file.parent_path() / entry, ec)) {
      const auto found = find_bundle(entry, dirs);
      if (!found) {
        std::string searched;
        for (const auto& d : dirs) searched += concat(searched.empty() ? "" : ", ", d.path.string(), " (", d.origin, ")");
        throw Error(concat(where.describe(), ": extends names the bundle '", entry, "', which is in none of ", searched),
                    "`plait bundles` lists the bundles; PLAIT_BUNDLE_PATH or [bundles] paths add folders, "
                    "and a path (with / or .toml) names a file");
      }
      out.emplace_back(*found, where);
      return;
    }
    fs::path target = file.parent_path() / entry;
    out.emplace_back(fs::absolute(target).lexically_normal(), where);
  };
  if (const toml::array* arr = node->as_array()) {
    for (const auto& item : *arr) add(item);
  } else {
    add(*node);
  }
  // A file listed twice is read once: the second entry would do nothing, silently.
  for (std::size_t i = 0; i < out.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      PLAIT_CHECK(out[j].first != out[i].first,
                  concat(out[i].second.describe(), ": extends lists ", out[i].first.filename().string(),
                         " twice (also at ", out[j].second.describe(), ")"),
                  "list each bundle or file once");
    }
  }
  return out;
}

void flatten(const toml::table& root, const std::string& shown, ConfigTree& tree) {
  for (const auto& [key, node] : root) {
    const std::string name(key.str());
    if (name == "extends") continue;
    Source where = source_of(key.source(), shown);
    if (const toml::table* table = node.as_table()) {
      tree.declare_table(name, where);
      for (const auto& [inner_key, inner] : *table) {
        Source inner_where = source_of(inner_key.source(), shown);
        const std::string dotted = name + "." + std::string(inner_key.str());
        tree.set(name, std::string(inner_key.str()),
                 {to_value(inner, inner_where.describe() + ": " + dotted), inner_where});
      }
    } else {
      tree.set("", name, {to_value(node, where.describe() + ": " + name), where});
    }
  }
}

// A config (or, `named_at` set, a file extends names) that is not there or not a file.
void refuse_missing_config(const fs::path& file, const Source* named_at) {
  const std::string shown = display_path(file);
  std::error_code ec;
  const fs::file_status status = fs::status(file, ec);
  if (!fs::exists(status)) {
    if (named_at != nullptr) {
      throw Error(named_at->describe() + ": extends names a file that does not exist: " + shown,
                  "paths in extends are relative to the file that names them");
    }
    throw Error("config file not found: " + shown, "check the path given to plait");
  }
  if (!fs::is_regular_file(status)) {
    const std::string what = fs::is_directory(status) ? "a folder" : "not a regular file";
    if (named_at != nullptr) {
      throw Error(concat(named_at->describe(), ": extends names ", shown, ", which is ", what, ", not a config file"),
                  "extends takes TOML files (bundles), relative to the file that names them");
    }
    throw Error(concat("the config ", shown, " is ", what, ", not a TOML file"),
                "pass the config file itself, e.g. configs/quickstart.toml");
  }
}

ConfigTree load_file(const fs::path& file, std::vector<fs::path>& stack, std::vector<std::string>& files,
                     const Source* named_at, const std::vector<BundleDir>& dirs) {
  const std::string shown = display_path(file);
  refuse_missing_config(file, named_at);
  for (const auto& open : stack) {
    if (fs::equivalent(open, file)) {
      std::string chain;
      for (const auto& p : stack) chain += display_path(p) + " -> ";
      throw Error(named_at->describe() + ": extends cycle: " + chain + shown,
                  "a bundle may not extend, directly or indirectly, the file that extends it");
    }
  }
  // A bundle shapes the job as a plugin does: one that others could change is refused as a plugin is.
  if (named_at != nullptr) {
    const std::string why = others_can_write(file, "anyone could change this job's settings");
    PLAIT_CHECK(why.empty(), concat(named_at->describe(), ": extends names ", shown, ", which is not read: ", why),
                "keep bundles where only you (or root) can write them, as plugins are kept");
  }
  stack.push_back(file);
  const toml::table root = parse_or_throw(file, shown, named_at != nullptr);
  // Bundles are found through the named config's [bundles] paths before any bundle is
  // read: a bundle's own would be shown as in effect and never used.
  if (const toml::node* paths = root.at_path("bundles.paths").node(); paths != nullptr && named_at != nullptr) {
    throw Error(concat(source_of(paths->source(), shown).describe(),
                       ": [bundles] paths in a bundle has no effect: only the config named on the command line says "
                       "where bundles are found"),
                "move it into that config, or set PLAIT_BUNDLE_PATH");
  }
  ConfigTree merged;
  for (const auto& [base, where] : extends_of(root, file, shown, dirs)) {
    merged.merge_from(load_file(base, stack, files, &where, dirs));
  }
  ConfigTree own;
  flatten(root, shown, own);
  merged.merge_from(own);
  files.push_back(shown);
  stack.pop_back();
  return merged;
}



}  // namespace

LoadedConfig load_config(const std::string& path, const std::vector<std::string>& overrides) {
  LoadedConfig out;
  out.path = path;
  std::vector<fs::path> stack;
  const fs::path file = fs::absolute(path).lexically_normal();
  out.tree = load_file(file, stack, out.files, nullptr, bundle_dirs(config_bundle_dirs(file)));
  out.tree.set_main_file(display_path(file));
  for (const auto& assignment : overrides) apply_override(out.tree, assignment);
  return out;
}

// The main config's [bundles] paths, relative to it (read before its extends are).
std::vector<BundleDir> config_bundle_dirs(const fs::path& file) {
  std::vector<BundleDir> out;
  std::error_code ec;
  refuse_missing_config(file, nullptr);
  const std::string shown = display_path(file);
  const toml::table root = parse_or_throw(file, shown, /*reached_by_extends=*/false);
  const toml::node* paths = root.at_path("bundles.paths").node();
  if (paths == nullptr) return out;
  const toml::array* arr = paths->as_array();
  if (arr == nullptr) {
    throw Error(source_of(paths->source(), shown).describe() + ": bundles.paths takes a list of folders",
                "write paths = [\"team-bundles\"]");
  }
  for (const auto& item : *arr) {
    const Source where = source_of(item.source(), shown);
    if (!item.is_string()) throw Error(where.describe() + ": bundles.paths takes folder names (strings)", "");
    const fs::path dir = fs::absolute(file.parent_path() / *item.value<std::string>()).lexically_normal();
    if (!fs::is_directory(dir, ec)) {
      throw Error(concat(where.describe(), ": bundles.paths names ", display_path(dir), ", which is not a folder"),
                  "paths in [bundles] paths are folders of bundles, relative to the config file");
    }
    out.push_back({dir, where.describe()});
  }
  return out;
}

namespace {

struct ValueFlag {
  std::string_view flag, key;
};
constexpr ValueFlag kValueFlags[] = {{"--steps", "train.steps"},
                                     {"--resume", "checkpoint.resume_from"},
                                     {"--max-restarts", "distributed.max_restarts"},
                                     {"--allow-batch-change", "checkpoint.allow_batch_change"},
                                     {"--seq-len", "data.seq_len"}};  // plait plan's

// "--resume=runs/a" -> {"checkpoint.resume_from=runs/a", "--resume runs/a"}; anything else
// is a --set assignment.
std::pair<std::string, std::string> assignment_and_flag(const std::string& override_text) {
  if (const auto tab = override_text.find('\t'); tab != std::string::npos) {  // derived_override's
    const std::string assignment = override_text.substr(tab + 1);
    return {assignment, concat(override_text.substr(0, tab), ", as ", assignment)};
  }
  const auto eq = override_text.find('=');
  if (override_text.rfind("--", 0) == 0 && eq != std::string::npos) {
    const std::string_view flag(override_text.data(), eq);
    for (const auto& f : kValueFlags) {
      if (f.flag != flag) continue;
      const std::string value = override_text.substr(eq + 1);
      const bool bare = f.key == "checkpoint.allow_batch_change";
      return {concat(f.key, "=", value), bare ? std::string(flag) : concat(flag, " ", value)};
    }
  }
  return {override_text, "--set " + override_text};
}

}  // namespace

std::string flag_override(const std::string& flag, const std::string& value) { return concat(flag, "=", value); }

std::string assignment_key(const std::string& assignment) {
  std::string key = assignment.substr(0, assignment.find('='));
  key.erase(std::remove(key.begin(), key.end(), ' '), key.end());
  return key;
}

std::string derived_override(const std::string& flag, const std::string& assignment) {
  return concat(flag, "\t", assignment);
}

void apply_override(ConfigTree& tree, const std::string& override_text) {
  const auto [assignment, flag] = assignment_and_flag(override_text);
  const std::string shown = abbreviate(flag);  // Source::describe() abbreviates it too
  const auto eq = assignment.find('=');
  if (eq == std::string::npos) {
    throw Error(shown + ": expected table.key=value", "for example --set train.lr=3e-4");
  }
  const std::string dotted = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  const auto dot = dotted.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == dotted.size() ||
      dotted.find('.', dot + 1) != std::string::npos) {
    throw Error(shown + ": the key must be table.key, got '" + abbreviate(dotted) + "'", "for example --set train.steps=100");
  }
  if (dotted == "bundles.paths") {
    throw Error(shown + ": [bundles] paths cannot be set with --set: bundles are found before --set applies",
                "write [bundles] paths in the config, or set PLAIT_BUNDLE_PATH");
  }
  tree.set(dotted.substr(0, dot), dotted.substr(dot + 1), {override_value(text, shown), Source::from_flag(flag)});
}

ConfigValue override_value(const std::string& text, const std::string& shown) {
  // A TOML value that starts with a letter is one of these four; any other such text is a
  // bare word, taken as a string without asking the parser (whose refusal is an exception:
  // a planner's search applies thousands of --set parallel.data=fsdp).
  const bool bare_word = !text.empty() && std::isalpha(static_cast<unsigned char>(text[0])) != 0 && text != "true" &&
                         text != "false" && text != "inf" && text != "nan";
  if (bare_word) return ConfigValue::of(text);
  try {
    const std::string doc = "v = " + text;
    toml::table parsed = toml::parse(std::string_view(doc), std::string_view("--set"));
    return to_value(*parsed.get("v"), shown);
  } catch (const toml::parse_error&) {
    return ConfigValue::of(text);  // a bare word: model.size=124m, data.source=data/x.bin
  }
}

}  // namespace plait
