#include "config/bundle_path.hpp"

#include <algorithm>
#include <fstream>
#include <set>

#include <toml++/toml.h>

#include "plait/sdk/error.hpp"
#include "util/toml_problem.hpp"
#include "util/search_path.hpp"

namespace plait {
namespace fs = std::filesystem;

namespace {

std::string first_comment_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    const auto text = line.find_first_not_of(" \t");
    if (text == std::string::npos) continue;
    if (line[text] != '#') return "";
    const auto words = line.find_first_not_of("# \t", text);
    return words == std::string::npos ? "" : line.substr(words);
  }
  return "";
}

}  // namespace

std::vector<BundleDir> bundle_dirs(const std::vector<BundleDir>& from_config) {
  std::vector<BundleDir> dirs{{install_prefix() / "share" / "plait" / "bundles", "built-in"}};
  for (const std::string& dir : env_path_list("PLAIT_BUNDLE_PATH")) {
    std::error_code ec;
    PLAIT_CHECK(fs::is_directory(dir, ec), concat("PLAIT_BUNDLE_PATH names ", dir, ", which is not a folder"),
                "PLAIT_BUNDLE_PATH is a ':'-separated list of folders of bundles (<name>.toml); fix or unset it");
    dirs.push_back({fs::absolute(dir).lexically_normal(), "PLAIT_BUNDLE_PATH"});
  }
  dirs.insert(dirs.end(), from_config.begin(), from_config.end());
  return dirs;
}

bool is_bundle_name(const std::string& entry) {
  return !entry.empty() && entry.find('/') == std::string::npos && !entry.ends_with(".toml");
}

std::optional<fs::path> find_bundle(const std::string& name, const std::vector<BundleDir>& dirs) {
  for (const auto& d : dirs) {
    const fs::path file = d.path / (name + ".toml");
    std::error_code ec;
    if (fs::is_regular_file(file, ec)) return file;
  }
  return std::nullopt;
}

std::vector<BundleInfo> list_bundles(const std::vector<BundleDir>& dirs) {
  std::vector<BundleInfo> out;
  std::set<std::string> seen;
  for (const auto& d : dirs) {
    std::error_code ec;
    if (!fs::is_directory(d.path, ec)) continue;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(d.path, ec)) {
      if (e.is_regular_file() && e.path().extension() == ".toml") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
      BundleInfo b{file.stem().string(), file, d.origin, first_comment_line(file), {}, {}};
      if (!seen.insert(b.name).second) continue;
      try {
        const toml::table root = toml::parse_file(file.string());
        for (const auto& [table, node] : root) {
          if (const toml::table* t = node.as_table()) {
            for (const auto& [key, value] : *t) b.keys.push_back(concat(table.str(), ".", key.str()));
          } else if (table.str() == "extends") {
            auto add = [&](const toml::node& n) { b.extends.push_back(n.value_or(std::string("?"))); };
            if (const toml::array* arr = node.as_array()) {
              for (const auto& n : *arr) add(n);
            } else {
              add(node);
            }
          }
        }
      } catch (const toml::parse_error& e) {
        b.description = concat("(invalid TOML at line ", e.source().begin.line, ", in ",
                               toml_problem(std::string(e.description())), ")");
      }
      out.push_back(std::move(b));
    }
  }
  return out;
}

}  // namespace plait
