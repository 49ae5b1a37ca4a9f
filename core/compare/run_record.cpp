#include "compare/run_record.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>

#include <toml++/toml.h>

#include "plait/sdk/error.hpp"
#include "util/toml_problem.hpp"
#include "output/run_status.hpp"
#include "util/json_problem.hpp"

namespace plait::compare {
namespace fs = std::filesystem;
namespace {

std::vector<std::string> lines_of(const fs::path& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string trim(std::string s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  const auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

// A value as the lock file writes it (its own text, not reformatted), and the comment
// after it on its line: where the value came from.
Setting setting_of(const toml::node& node, const std::vector<std::string>& lines) {
  const auto& begin = node.source().begin;
  const auto& end = node.source().end;
  if (begin.line == 0 || end.line != begin.line || end.line > lines.size()) return {"?", ""};
  const std::string& line = lines[end.line - 1];
  const std::size_t from = std::min<std::size_t>(begin.column - 1, line.size());
  const std::size_t to = std::min<std::size_t>(end.column > 0 ? end.column - 1 : 0, line.size());
  const std::size_t hash = line.find('#', to);
  return {trim(line.substr(from, to - from)), hash == std::string::npos ? "" : trim(line.substr(hash + 1))};
}

void read_lock(RunRecord& run, const fs::path& file) {
  toml::table lock;
  try {
    lock = toml::parse_file(file.string());
  } catch (const toml::parse_error& e) {
    throw Error(concat(file.string(), ":", e.source().begin.line, ": not a lock file plait can read (", toml_problem(std::string(e.description())), ")"),
                "compare reads the config.lock.toml that plait run writes into the run folder");
  }
  const std::vector<std::string> lines = lines_of(file);
  for (const auto& [table_key, table_node] : lock) {
    const std::string table(table_key.str());
    const toml::table* t = table_node.as_table();
    if (t == nullptr) continue;
    if (table == "lock") {
      const auto* paths = t->get_as<toml::array>("bundles");
      const auto* sums = t->get_as<toml::array>("bundle_xxh3");
      for (std::size_t i = 0; paths != nullptr && i < paths->size(); ++i) {
        const auto sum = sums != nullptr && i < sums->size() ? (*sums)[i].value<std::string>() : std::nullopt;
        run.bundles.push_back({(*paths)[i].value_or(std::string()), sum.value_or("")});
      }
      run.world_size = t->get("world_size") ? t->get("world_size")->value_or<int64_t>(1) : 1;
      run.flops_per_token = t->get("flops_per_token") ? t->get("flops_per_token")->value_or(0.0) : 0.0;
      continue;
    }
    for (const auto& [key, node] : *t) {
      run.settings[table + "." + std::string(key.str())] = setting_of(node, lines);
    }
  }
}

void read_metrics(RunRecord& run, const fs::path& file) {
  std::ifstream in(file);
  PLAIT_CHECK(in.good(), concat(run.dir, ": no metrics.jsonl (the run recorded no step)"),
              "compare runs that trained at least one step");
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (trim(line).empty()) continue;
    try {
      run.metrics.push_back(nlohmann::json::parse(line));
    } catch (const nlohmann::json::exception& e) {
      // A run killed while writing leaves its last line short: that line is dropped, and said.
      if (in.peek() == EOF) {
        run.torn_last_line = true;
        break;
      }
      throw Error(concat(file.string(), ":", line_no, ": not a JSON record: ", json_problem(e)),
                  "the run's metrics were damaged after it wrote them");
    }
  }
  PLAIT_CHECK(!run.metrics.empty(), concat(file.string(), ": no step recorded"), "compare runs that trained at least one step");
}

}  // namespace

RunRecord load_run(const std::string& dir) {
  const fs::path folder(dir);
  PLAIT_CHECK(fs::is_directory(folder), concat(dir, ": no such run folder"), "pass run folders that plait run wrote");
  PLAIT_CHECK(fs::exists(folder / "config.lock.toml"), concat(dir, ": no config.lock.toml, so not a plait run folder"),
              "pass run folders that plait run wrote (or a sweep folder that holds them)");
  RunRecord run;
  run.dir = dir;
  run.name = folder.lexically_normal().filename().string();
  if (run.name.empty()) run.name = folder.lexically_normal().parent_path().filename().string();
  read_lock(run, folder / "config.lock.toml");
  read_metrics(run, folder / "metrics.jsonl");
  if (const auto status = read_run_status(dir)) {
    run.state = status->state;
    run.reason = status->reason;
  }
  return run;
}

std::vector<RunRecord> load_runs(const std::vector<std::string>& dirs) {
  std::vector<RunRecord> out;
  std::map<std::string, std::size_t> group_at;  // "<parent>/<name>" -> index in out
  const std::regex repeat(R"(^(.*)\.r([0-9]+)$)");
  for (const auto& dir : dirs) {
    RunRecord run = load_run(dir);
    std::smatch m;
    const std::string base = run.name;
    if (!std::regex_match(base, m, repeat)) {
      out.push_back(std::move(run));
      continue;
    }
    const std::string key = fs::path(dir).lexically_normal().parent_path().string() + "/" + m[1].str();
    const auto it = group_at.find(key);
    if (it == group_at.end()) {
      run.name = m[1].str();
      group_at[key] = out.size();
      out.push_back(std::move(run));
    } else {
      out[it->second].repeats.push_back(std::move(run.metrics));
    }
  }
  return out;
}

namespace {

// The runs of a sweep folder in the order its sweep.json lists their combinations, so that
// its first combination is the baseline, as in the sweep's own report; other folders (and
// every folder when there is no sweep.json) by name.
void sort_as_swept(std::vector<std::string>& runs, const fs::path& sweep_json) {
  std::map<std::string, std::size_t> rank;
  if (fs::exists(sweep_json)) {
    std::ifstream in(sweep_json);
    const nlohmann::json sweep = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (sweep.is_object() && sweep.contains("combinations") && sweep["combinations"].is_array()) {
      for (const auto& c : sweep["combinations"]) {
        if (c.is_object() && c.contains("name") && c["name"].is_string()) rank.emplace(c["name"], rank.size());
      }
    }
  }
  auto order = [&](const std::string& dir) {
    const auto it = rank.find(combination_of(dir));
    return std::make_pair(it == rank.end() ? rank.size() : it->second, dir);
  };
  std::sort(runs.begin(), runs.end(), [&](const std::string& a, const std::string& b) { return order(a) < order(b); });
}

}  // namespace

std::string combination_of(const std::string& folder) {
  static const std::regex repeat(R"(^(.*)\.r[0-9]+$)");
  const std::string name = fs::path(folder).filename().string();
  std::smatch m;
  return std::regex_match(name, m, repeat) ? m[1].str() : name;
}

namespace {

// A run compared with itself (the same folder twice, or through a link) agrees with itself
// in everything: a report that says so compares nothing.
void refuse_same_run_twice(const std::vector<std::string>& runs) {
  std::map<fs::path, std::string> seen;  // the real folder -> as the user named it
  for (const auto& run : runs) {
    std::error_code ec;
    fs::path real = fs::weakly_canonical(run, ec);
    if (ec) real = fs::absolute(run).lexically_normal();
    const auto [it, fresh] = seen.emplace(real, run);
    if (fresh) continue;
    const bool same_words = fs::path(it->second).lexically_normal() == fs::path(run).lexically_normal();
    throw Error(concat("plait compare: ", run, " is the run ", it->second,
                       same_words ? " named twice" : concat(" again, by another path (both are ", real.string(), ")"),
                       ": a run compared with itself shows no difference"),
                "compare two different runs, or a sweep folder");
  }
}

}  // namespace

std::vector<std::string> expand_run_folders(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const auto& p : paths) {
    if (fs::exists(fs::path(p) / "config.lock.toml") || !fs::is_directory(p)) {
      out.push_back(p);
      continue;
    }
    std::vector<std::string> inside;
    for (const auto& e : fs::directory_iterator(p)) {
      if (e.is_directory() && fs::exists(e.path() / "config.lock.toml")) inside.push_back(e.path().string());
    }
    PLAIT_CHECK(!inside.empty(), concat(p, ": neither a run folder nor a folder of runs (no config.lock.toml in it or its folders)"),
                "pass run folders that plait run wrote, or the folder plait sweep wrote");
    sort_as_swept(inside, fs::path(p) / "sweep.json");
    out.insert(out.end(), inside.begin(), inside.end());
  }
  refuse_same_run_twice(out);
  return out;
}

}  // namespace plait::compare
