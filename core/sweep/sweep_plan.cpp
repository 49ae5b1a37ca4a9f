#include "sweep/sweep_plan.hpp"

#include <set>

#include "config/config_loader.hpp"
#include "plait/sdk/error.hpp"

namespace plait::sweep {
namespace {

std::vector<std::string> split_top_level(const std::string& text) {
  std::vector<std::string> out(1);
  int depth = 0;
  char quote = 0;
  for (char ch : text) {
    if (quote != 0) {
      if (ch == quote) quote = 0;
    } else if (ch == '"' || ch == '\'') {
      quote = ch;
    } else if (ch == '[' || ch == '{') {
      ++depth;
    } else if (ch == ']' || ch == '}') {
      --depth;
    } else if (ch == ',' && depth == 0) {
      out.emplace_back();
      continue;
    }
    out.back() += ch;
  }
  return out;
}

// A value as it may stand in a folder name: letters, digits, '.', '-', '+'; the rest as '~'.
std::string folder_safe(const std::string& text) {
  std::string out;
  for (char ch : text) {
    const bool keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
                      ch == '-' || ch == '+';
    if (ch == '"' || ch == '\'') continue;
    out += keep ? ch : '~';
  }
  return out.empty() ? "~" : out;
}

}  // namespace

Variation parse_vary(const std::string& flag) {
  const std::string where = concat("--vary ", flag);
  const auto eq = flag.find('=');
  PLAIT_CHECK(eq != std::string::npos && eq > 0, concat(where, ": expected KEY=V1,V2,..."),
              "for example --vary parallel.data=ddp,zero,fsdp");
  Variation v{flag.substr(0, eq), {}};
  const auto dot = v.key.find('.');
  PLAIT_CHECK(dot != std::string::npos && dot > 0 && dot + 1 < v.key.size() && v.key.find('.', dot + 1) == std::string::npos,
              concat(where, ": '", v.key, "' is not a table.key"), "name the setting as --set would, e.g. zero.stage");
  for (const auto& value : split_top_level(flag.substr(eq + 1))) {
    PLAIT_CHECK(!value.empty(), concat(where, ": an empty value"), "separate the values with single commas");
    v.values.push_back(value);
  }
  return v;
}

void check_variation(const Variation& v, const SchemaOf& schema_of) {
  const std::string table = v.key.substr(0, v.key.find('.')), key = v.key.substr(v.key.find('.') + 1);
  const TableSchema* schema = schema_of(table);
  PLAIT_CHECK(schema != nullptr, concat("--vary ", v.key, ": no table [", table, "]: it is neither the core's nor a plugin's found here"),
              "`plait config show CONFIG --resolved` lists the tables; a plugin's table is named after the plugin");
  std::vector<std::pair<std::string, OptionValue>> seen;
  for (const auto& text : v.values) {
    const std::string flag = concat("--vary ", v.key, "=", text);
    const OptionValue value = check_value(*schema, key, override_value(text, flag), Source::from_flag(flag));
    for (const auto& [earlier, same] : seen) {
      PLAIT_CHECK(!(same == value),
                  concat("--vary ", v.key, ": ", earlier == text ? concat(text, " is given twice")
                                                                 : concat(earlier, " and ", text, " are the same value")),
                  "give each value once: two runs of one setting differ only by noise (--repeats N runs each of them N times)");
    }
    seen.emplace_back(text, value);
  }
}

std::vector<Combination> combinations(const std::vector<Variation>& variations) {
  std::set<std::string> keys;
  for (const auto& v : variations) {
    PLAIT_CHECK(keys.insert(v.key).second, concat("--vary ", v.key, " is given twice"),
                "give each key once, with all its values");
  }
  std::vector<Combination> out{Combination{}};
  for (const auto& v : variations) {
    std::vector<Combination> next;
    for (const auto& c : out) {
      for (const auto& value : v.values) {
        Combination more = c;
        more.sets.push_back(v.key + "=" + value);
        more.name += concat(more.name.empty() ? "" : "_", v.key.substr(v.key.find('.') + 1), "-", folder_safe(value));
        next.push_back(std::move(more));
      }
    }
    out = std::move(next);
  }
  // Two keys named alike in different tables (data.seed, train.seed) would collide: number them.
  std::set<std::string> names;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i].name.empty()) out[i].name = "base";
    if (!names.insert(out[i].name).second) out[i].name += concat("-", i + 1);
  }
  return out;
}

std::vector<PlannedRun> run_order(const std::vector<Combination>& kept, int repeats) {
  std::vector<PlannedRun> out;
  const std::size_t n = kept.size();
  // Each repeat starts further into the list, so that no combination always runs first
  // (or right after the same one) in its round: a place's effect is shared out.
  const std::size_t shift = n == 0 ? 0 : (n + static_cast<std::size_t>(repeats) - 1) / static_cast<std::size_t>(repeats);
  for (int r = 1; r <= repeats; ++r) {
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t c = (i + static_cast<std::size_t>(r - 1) * shift) % n;
      out.push_back({c, r, repeats == 1 ? kept[c].name : concat(kept[c].name, ".r", r)});
    }
  }
  return out;
}

}  // namespace plait::sweep
