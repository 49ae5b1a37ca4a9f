#include "scaffold/plugin_template.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include <boost/dll/runtime_symbol_info.hpp>

#include "plait/sdk/error.hpp"
#include "util/abbreviate.hpp"
#include "util/did_you_mean.hpp"
#include "util/read_text.hpp"
#include "util/search_path.hpp"
#include "util/writable_folder.hpp"

namespace plait::scaffold {
namespace fs = std::filesystem;

namespace {

// What differs between templates beyond their own files.
struct TemplateInfo {
  std::string folder;      // under share/plait/templates
  std::string components;  // find_package(plait REQUIRED<components>)
  std::string link;        // CMake lines after plait_add_plugin
  std::string role;        // config.toml's [parallel] lines (and tables after it)
};

const std::map<std::string, TemplateInfo>& templates() {
  static const std::map<std::string, TemplateInfo> all = {
      {"data", {"data", "", "", "data = \"@NAME@\"\ndp = 2"}},
      {"data --from sharding",
       {"sharding", " COMPONENTS sharding", "target_link_libraries(plait_plugin_@NAME@ PRIVATE plait::sharding)",
        "data = \"@NAME@\"\ndp = 2\n\n[@NAME@]\nstage = 3"}},
      {"pipeline", {"pipeline", "", "", "pipeline = \"@NAME@\"\npp = 2"}},
      {"tensor", {"tensor", "", "", "tensor = \"@NAME@\"\ntp = 2"}},
      {"adapter", {"adapter", "", "", "data = \"ddp\"\ndp = 2\nadapter = \"@NAME@\""}},
      {"offload", {"offload", "", "", "data = \"zero\"\ndp = 2\noffload = \"@NAME@\"\n\n[zero]\nstage = 2"}},
      {"comm",
       {"comm", " COMPONENTS c10d",
        "# LibTorch has ProcessGroupGloo compiled in, but not gloo's headers (Debian: libgloo-dev).\n"
        "find_path(GLOO_INCLUDE_DIR gloo/rendezvous/store.h REQUIRED)\n"
        "target_include_directories(plait_plugin_@NAME@ SYSTEM PRIVATE ${GLOO_INCLUDE_DIR})\n"
        "target_compile_definitions(plait_plugin_@NAME@ PRIVATE USE_C10D_GLOO)\n"
        "target_link_libraries(plait_plugin_@NAME@ PRIVATE plait::c10d)",
        "data = \"ddp\"\ndp = 2\ncomm = \"@NAME@\""}},
  };
  return all;
}

const TemplateInfo& template_for(const NewPlugin& r) {
  const std::string key = r.from.empty() ? r.kind : concat(r.kind, " --from ", r.from);
  const auto it = templates().find(key);
  if (it != templates().end()) return it->second;
  PLAIT_CHECK(r.from.empty() || r.from == "sharding",
              concat("plait new plugin: --from ", r.from, ": no such template (--from takes sharding)"),
              "leave --from out, or give --kind data --from sharding");
  PLAIT_CHECK(r.from.empty(), concat("plait new plugin: --from sharding makes a data plugin, not ", plugin_of_kind(r.kind)),
              "use --kind data --from sharding");
  throw Error(concat("plait new plugin: --kind ", r.kind, " has no template"),
              "--kind takes data, pipeline, tensor, offload, comm or adapter (and data --from sharding)");
}

// A name becomes a file (libplait_plugin_NAME.so), a CMake target and a C++ class: past 64
// characters it is unreadable, and past 236 no file system can hold the library's name.
constexpr std::size_t kMaxNameLength = 64;

void check_name(const std::string& name) {
  PLAIT_CHECK(name.size() <= kMaxNameLength,
              concat("plait new plugin: the name '", abbreviate(name, 24), "' is ", name.size(),
                     " characters long, past the limit of ", kMaxNameLength),
              concat("choose a name of at most ", kMaxNameLength, " characters (it becomes libplait_plugin_NAME.so)"));
  PLAIT_CHECK(std::regex_match(name, std::regex("[a-z][a-z0-9-]*")) && name != "none",
              concat("plait new plugin: '", name, "' is not a plugin name"),
              "a name is lower-case letters, digits and '-', starting with a letter (and not 'none')");
}

// The project's folder, or the nearest one above it that exists, must take new files:
// found before anything is written, with the system's reason (a read-only mount, say).
void check_folder(const fs::path& dir) {
  std::error_code ec;
  PLAIT_CHECK(!fs::exists(dir, ec) || (fs::is_directory(dir, ec) && fs::is_empty(dir, ec)),
              concat("plait new plugin: ", dir.string(), " exists and is not an empty folder"),
              "give --dir a new folder, or remove that one");
  const fs::path parent = nearest_existing(dir.parent_path());
  PLAIT_CHECK(fs::is_directory(parent, ec), concat("plait new plugin: cannot make ", dir.string(), ": ", parent.string(), " is a file"),
              "give --dir a folder under a folder");
  const std::string problem = folder_write_problem(parent);
  PLAIT_CHECK(problem.empty(),
              concat("plait new plugin: cannot write the project into ", parent.string(), ": the folder is not writable (",
                     problem, ")"),
              "give --dir a folder you can write, or run it in one (the default is ./NAME)");
}

// The folder of this plait's CMake package: the install's, or the build tree's.
std::string package_dir() {
  const fs::path prefix = install_prefix();
  for (const fs::path& dir : {prefix / "lib" / "cmake" / "plait", prefix / "sdk"}) {
    if (fs::exists(dir / "plaitConfig.cmake")) return dir.string();
  }
  throw Error(concat("plait new plugin: no plaitConfig.cmake under ", prefix.string()),
              "install plait (cmake --install) or build it, then run this plait");
}

std::string substitute(std::string text, const std::map<std::string, std::string>& values) {
  for (const auto& [key, value] : values) {
    for (std::size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + value.size())) {
      text.replace(at, key.size(), value);
    }
  }
  return text;
}

// Every file of `from` into `to`, substituted; "X.in" becomes "X".
void copy_substituted(const fs::path& from, const fs::path& to, const std::map<std::string, std::string>& values) {
  for (const auto& entry : fs::directory_iterator(from)) {
    if (!entry.is_regular_file()) continue;
    std::string name = entry.path().filename().string();
    if (name.ends_with(".in")) name.resize(name.size() - 3);
    std::ofstream out(to / name);
    out << substitute(read_text(entry.path()), values);
    PLAIT_CHECK(out.good(), concat("plait new plugin: cannot write ", (to / name).string()), "");
  }
}

}  // namespace

std::string plugin_of_kind(const std::string& kind) {
  const bool vowel = !kind.empty() && std::string_view("aeiou").find(kind.front()) != std::string_view::npos;
  return concat(vowel ? "an " : "a ", kind, " plugin");
}

std::string class_name(const std::string& plugin_name) {
  std::string out;
  bool upper = true;
  for (char c : plugin_name) {
    if (c == '-' || c == '_' || c == '.') {
      upper = true;
    } else {
      out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
      upper = false;
    }
  }
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out.front()))) out = "Plugin" + out;
  return out;
}

std::string write_plugin_project(const NewPlugin& r) {
  check_name(r.name);
  const TemplateInfo& info = template_for(r);
  const fs::path root = install_prefix() / "share" / "plait" / "templates";
  PLAIT_CHECK(fs::is_directory(root / info.folder) && fs::is_directory(root / "common"),
              concat("plait new plugin: no templates in ", root.string()), "this plait's install is incomplete: install it again");
  const fs::path dir = fs::absolute(r.dir.empty() ? fs::path(r.name) : fs::path(r.dir)).lexically_normal();
  check_folder(dir);
  const std::map<std::string, std::string> values = {
      {"@ROLE_CONFIG@", substitute(info.role, {{"@NAME@", r.name}})},
      {"@COMPONENTS@", info.components},
      {"@LINK@", substitute(info.link, {{"@NAME@", r.name}})},
      {"@NAME@", r.name},
      {"@CLASS@", class_name(r.name)},
      {"@KIND@", r.kind},
      {"@PLAIT@", boost::dll::program_location().string()},
      {"@PLAIT_DIR@", package_dir()},
  };
  // Written beside the target and renamed into place: the project appears whole or not at all.
  const fs::path staging = dir.parent_path() / concat(".", dir.filename().string(), ".partial");
  std::error_code ec;
  fs::remove_all(staging, ec);
  try {
    fs::create_directories(staging);
    copy_substituted(root / "common", staging, values);
    copy_substituted(root / info.folder, staging, values);
    fs::permissions(staging / "test.sh", fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                    fs::perm_options::add);
    if (fs::exists(dir)) fs::remove(dir);  // empty, checked above
    fs::rename(staging, dir);
  } catch (const std::exception& e) {
    fs::remove_all(staging, ec);
    if (dynamic_cast<const Error*>(&e) != nullptr) throw;
    const auto* fe = dynamic_cast<const fs::filesystem_error*>(&e);
    throw Error(concat("plait new plugin: writing ", dir.string(), " failed, and nothing was left there: ",
                       fe ? fe->code().message() : std::string(e.what())),
                "check the free space and permissions of its folder");
  }
  return dir.string();
}

}  // namespace plait::scaffold
