// plait verify: one command that says whether a plugin is correct, complete and honest,
// as a pass/fail table and a JSON report, each failure with the command that reruns it.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>

#include <boost/dll/runtime_symbol_info.hpp>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "loader/host_abi.hpp"
#include "plait/sdk/error.hpp"
#include "util/subprocess.hpp"
#include "run/prepare.hpp"
#include "output/run_folder.hpp"
#include "util/did_you_mean.hpp"
#include "util/writable_folder.hpp"
#include "verify/combinations.hpp"
#include "verify/verify_library.hpp"

namespace plait::cli {
namespace fs = std::filesystem;
using verify::Outcome;

namespace {

bool is_path(const std::string& s) { return s.find('/') != std::string::npos || s.ends_with(".so"); }

// A library given by path is searched in its folder first, by this plait and by every
// run it starts (they inherit the environment).
void search_first(const fs::path& library) {
  PLAIT_CHECK(fs::is_regular_file(library), concat("plait verify: no file ", library.string()),
              "give a plugin's name (`plait plugins` lists them) or the path of its libplait_plugin_<name>.so");
  const char* old = std::getenv("PLAIT_PLUGIN_PATH");
  const std::string dir = library.parent_path().string();
  setenv("PLAIT_PLUGIN_PATH", (old && *old ? dir + ":" + old : dir).c_str(), 1);
}

std::string status_word(const std::string& s) { return s == "pass" ? "PASS" : s == "fail" ? "FAIL" : "SKIP"; }

void print_row(const Outcome& o) {
  std::printf("  %s  %-12s %s", status_word(o.status).c_str(), o.group.c_str(), o.title.c_str());
  if (o.seconds >= 0.05) std::printf(" (%.1f s)", o.seconds);
  std::printf("\n        %s\n", o.detail.c_str());
  if (o.status == "fail" && o.reproduce != "plait plugins") std::printf("        reproduce: %s\n", o.reproduce.c_str());
  std::fflush(stdout);
}

nlohmann::ordered_json report_json(const PluginRecord* p, const std::string& asked, bool quick, const std::vector<Outcome>& rows,
                                   double seconds) {
  nlohmann::ordered_json j;
  j["plugin"] = p ? nlohmann::ordered_json{{"name", p->name}, {"kind", p->kind}, {"version", p->version},
                                           {"api", concat(p->api_major, ".", p->api_minor)}, {"path", p->path}}
                  : nlohmann::ordered_json{{"asked", asked}};
  j["mode"] = quick ? "quick" : "full";
  bool passed = true;
  for (const auto& r : rows) passed = passed && r.status != "fail";
  j["passed"] = passed;
  j["seconds"] = seconds;
  for (const auto& r : rows) {
    j["checks"].push_back({{"group", r.group}, {"title", r.title}, {"status", r.status}, {"detail", r.detail},
                           {"reproduce", r.reproduce}, {"seconds", r.seconds}});
  }
  return j;
}

// The plugin asked for, or why there is none: refused (a row), or not found (an error).
const PluginRecord* find_plugin(const PluginRegistry& registry, const std::string& asked, std::vector<Outcome>& rows) {
  if (is_path(asked)) {
    const fs::path want = fs::weakly_canonical(asked);
    for (const auto& p : registry.plugins()) {
      if (fs::weakly_canonical(p.path) == want) return &p;
    }
    for (const auto& r : registry.refusals()) {
      if (fs::weakly_canonical(r.path) == want) {
        rows.push_back(verify::refused_library(r));
        return nullptr;
      }
    }
    throw Error(concat("plait verify: ", asked, " is not a plugin library (its name must be libplait_plugin_<name>.so)"), "");
  }
  if (const PluginRecord* p = registry.find(asked)) return p;
  std::vector<std::string> names;
  for (const auto& p : registry.plugins()) names.push_back(p.name);
  throw Error(concat("plait verify: no plugin named '", asked, "'", did_you_mean(asked, names)),
              "`plait plugins` lists the plugins found; give a library's path to verify one elsewhere");
}

// What `plait config validate` would say against the base config with `sets`, or nothing.
// The base is written to a folder of its own, removed again: nothing is left behind.
std::optional<Error> refusal_of(const std::vector<std::string>& sets) {
  std::string folder = (fs::temp_directory_path() / "plait-verify-XXXXXX").string();
  if (::mkdtemp(folder.data()) == nullptr) return std::nullopt;  // cannot tell here: the cases will
  const std::string base = (fs::path(folder) / "base.toml").string();
  std::optional<Error> refused;
  try {
    write_file_atomically(base, verify::base_config_toml());
    prepare_run(base, sets);
  } catch (const Error& e) {
    // The temporary's path means nothing to the user: the verify folder will hold base.toml.
    std::string what = e.what();
    for (auto at = what.find(base); at != std::string::npos; at = what.find(base)) what.replace(at, base.size(), "base.toml");
    refused.emplace(what.substr(0, what.find('\n')), e.hint());
  }
  std::error_code ec;
  fs::remove_all(folder, ec);
  return refused;
}

// The user's --set flags go into every case: one the config refuses would fail each case
// as if the plugin had, minutes later. Checked once, before anything runs, on the first
// case as `plait config validate` checks it; a refusal without the flags is the plugin's
// own, which its cases report.
void check_user_sets(const PluginRecord& plugin, const VerifyArgs& args) {
  if (args.sets.empty() || !plugin.available) return;
  const auto with = verify::plan_cases(plugin, args.quick, args.sets);
  const auto without = verify::plan_cases(plugin, args.quick, {});
  if (with.empty() || without.empty() || refusal_of(without.front().sets)) return;
  const std::optional<Error> refused = refusal_of(with.front().sets);
  if (!refused) return;
  std::string flags;
  for (const auto& s : args.sets) flags += concat(" --set ", s);
  throw Error(concat(refused->what(), " (plait verify checked it before running any case)"),
              concat(refused->hint().empty() ? "" : refused->hint() + "\n  ", "every case runs with", flags,
                     ": fix or drop the flag named"));
}

}  // namespace

int verify(const VerifyArgs& args) {
  catch_stop_signals();  // a stop passes to the case's run under way, which stops as asked
  // Where the report goes is checked before the cases, not after the quarter hour they take.
  if (args.json) check_file_writable(*args.json, "--json");
  if (is_path(args.plugin)) search_first(args.plugin);
  const PluginRegistry registry = discover_plugins();
  std::vector<Outcome> rows;
  const PluginRecord* plugin = find_plugin(registry, args.plugin, rows);
  if (plugin) check_user_sets(*plugin, args);
  const std::string name = plugin ? plugin->name : fs::path(args.plugin).stem().string();
  const std::string folder = choose_run_folder(args.out.value_or(""), "verify-" + name);
  create_run_folder(folder);
  const verify::Workspace ws{boost::dll::program_location().string(), folder, (fs::path(folder) / "base.toml").string(),
                             args.loss_gap};
  write_file_atomically(ws.base_config, verify::base_config_toml());

  const auto start = std::chrono::steady_clock::now();
  std::cout << "plait verify " << args.plugin << (args.quick ? " --quick" : "") << ": runs in " << folder << "\n";
  if (plugin) {
    for (auto& r : verify::library_checks(*plugin, host_abi())) rows.push_back(std::move(r));
  }
  for (const auto& r : rows) print_row(r);
  if (plugin) {
    const auto cases = verify::plan_cases(*plugin, args.quick, args.sets);
    for (std::size_t i = 0; i < cases.size(); ++i) {
      Outcome o = plugin->available
                      ? verify::run_case(cases[i], ws, static_cast<int>(i + 1))
                      : Outcome{cases[i].group, cases[i].title, "skip", concat("unavailable here: ", plugin->unavailable_reason), "", 0.0};
      print_row(o);
      rows.push_back(std::move(o));
    }
    if (args.combos > 0 && plugin->available) {
      for (auto& r : verify::check_combinations(*plugin, ws, args.combos, args.seed, args.sets, print_row)) {
        rows.push_back(std::move(r));
      }
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto j = report_json(plugin, args.plugin, args.quick, rows, seconds);
  const std::string text = j.dump(2) + "\n";
  write_file_atomically((fs::path(folder) / "verify.json").string(), text);
  if (args.json) write_file_atomically(*args.json, text);
  int failed = 0, skipped = 0;
  for (const auto& r : rows) failed += r.status == "fail", skipped += r.status == "skip";
  std::printf("%s: %zu checks, %d failed, %d skipped, in %.0f s; report %s\n", failed ? "FAIL" : "PASS", rows.size(),
              failed, skipped, seconds, (fs::path(folder) / "verify.json").c_str());
  return failed ? 1 : 0;
}

}  // namespace plait::cli
