#include "loader/plugin_registry.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <set>
#include <sstream>

#include <boost/dll/shared_library.hpp>

#include "loader/capability_versions.hpp"
#include "loader/library_file.hpp"
#include "debug/plugin_hook.hpp"
#include "plait/sdk/error.hpp"
#include "util/others_can_write.hpp"
#include "util/did_you_mean.hpp"
#include "util/search_path.hpp"

namespace plait {
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kKinds = {"data", "comm", "pipeline", "tensor", "offload", "adapter"};

std::vector<std::string> split_words(const char* text) {
  std::vector<std::string> out;
  if (text == nullptr) return out;
  std::stringstream in(text);
  std::string word;
  while (std::getline(in, word, ',')) {
    word.erase(0, word.find_first_not_of(" \t"));
    word.erase(word.find_last_not_of(" \t") + 1);
    if (!word.empty()) out.push_back(word);
  }
  return out;
}

bool is_candidate(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.rfind("libplait_plugin_", 0) == 0 && p.extension() == ".so";
}

std::string str_or_empty(const char* s) { return s == nullptr ? std::string{} : std::string(s); }

// Before API 12 the plugin API had one number, in the field that is now the major.
constexpr uint32_t kFirstMajorWithMinor = 12;

std::string api_name(uint32_t major, uint32_t minor) {
  return major < kFirstMajorWithMinor ? concat(major) : concat(major, ".", minor);
}

// The size of PlaitPluginInfo in API 12.0. Fields a later minor appends are read only
// from plugins whose info_size covers them.
constexpr uint32_t kInfoSize12_0 = offsetof(PlaitPluginInfo, destroy) + sizeof(PlaitPluginInfo::destroy);

// Why a library built for another plait, LibTorch or C++ ABI cannot be used, or "".
// The version fields come first in every version of the struct: read them, and nothing
// else, until they match.
std::string build_mismatch(const PlaitPluginInfo& info, const HostAbi& host) {
  const std::string theirs = api_name(info.api_major, info.api_minor), ours = api_name(host.api_major, host.api_minor);
  if (info.api_major != host.api_major) {
    return concat("was built for plugin API ", theirs, " but this plait has API ", ours, ", another major version; ",
                  info.api_major < host.api_major ? "rebuild the plugin against this plait's SDK"
                                                  : "run it with a plait of its major version");
  }
  if (info.api_minor > host.api_minor) {
    return concat("was built for plugin API ", theirs, " but this plait has API ", ours, ", which lacks what ", theirs,
                  " added; upgrade plait, or build the plugin against the SDK of API ", ours);
  }
  if (info.info_size < kInfoSize12_0) {
    return concat("has a plugin info struct of ", info.info_size, " bytes where API ", theirs, " has at least ",
                  kInfoSize12_0, "; make it with PLAIT_PLUGIN(...)");
  }
  const std::string torch_version = str_or_empty(info.torch_version);
  if (torch_version != host.torch_version) {
    return concat("was built against LibTorch ", torch_version, " but this plait runs LibTorch ", host.torch_version,
                  "; rebuild the plugin with the same LibTorch");
  }
  if (info.cxx11_abi != host.cxx11_abi) {
    return concat("was built with _GLIBCXX_USE_CXX11_ABI=", info.cxx11_abi, " but this plait uses ", host.cxx11_abi,
                  "; rebuild it with the same C++ ABI as LibTorch");
  }
  return "";
}

}  // namespace

bool PluginRecord::has_capability(const std::string& word) const {
  return std::find(capabilities.begin(), capabilities.end(), word) != capabilities.end();
}

std::string PluginRecord::lacking(const std::string& word) const {
  for (const std::string& p : predated_capabilities) {
    if (p.rfind(word + " (", 0) == 0) {
      return concat("it lists '", word, "', but it was built for plugin API ", api_name(api_major, api_minor),
                    ", before ", p.substr(word.size() + 2, p.size() - word.size() - 3),
                    " gave the word its meaning (rebuild it against this plait's SDK)");
    }
  }
  return concat("it lacks the capability '", word, "'");
}

std::string builtin_plugin_dir() { return (install_prefix() / "lib" / "plait" / "plugins").string(); }

std::vector<SearchDir> default_search_dirs(const std::vector<SearchDir>& from_config) {
  std::vector<SearchDir> dirs{{builtin_plugin_dir(), "built-in"}};
  for (const std::string& dir : env_path_list("PLAIT_PLUGIN_PATH")) dirs.push_back({dir, "PLAIT_PLUGIN_PATH"});
  dirs.insert(dirs.end(), from_config.begin(), from_config.end());
  return dirs;
}

PluginRegistry PluginRegistry::discover(const std::vector<SearchDir>& dirs, const HostAbi& host) {
  PluginRegistry registry;
  registry.dirs_ = dirs;
  std::set<fs::path> seen;
  for (const auto& dir : dirs) {
    std::error_code ec;
    const fs::file_status status = fs::status(dir.path, ec);
    if (!fs::is_directory(status)) {
      if (dir.origin == "built-in") continue;  // an SDK-only install has none
      const std::string what = fs::exists(status) ? "is a file, not a folder" : "does not exist";
      if (dir.origin == "PLAIT_PLUGIN_PATH") {
        throw Error(concat("PLAIT_PLUGIN_PATH names a plugin folder that ", what, ": ", dir.path),
                    "PLAIT_PLUGIN_PATH is a ':'-separated list of folders holding libplait_plugin_*.so; fix or unset it");
      }
      throw Error(concat(dir.origin, ": plugin folder ", what, ": ", dir.path),
                  "[plugins].paths are folders holding libplait_plugin_*.so, relative to the config file that names them");
    }
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir.path)) {
      if (entry.is_regular_file() && is_candidate(entry.path())) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
      const fs::path canonical = fs::weakly_canonical(file);
      if (!seen.insert(canonical).second) continue;  // the same file through two search entries
      registry.consider(canonical.string(), dir, host);
    }
  }
  return registry;
}

void PluginRegistry::consider(const std::string& file, const SearchDir& dir, const HostAbi& host) {
  auto refuse = [&](const std::string& why) { refusals_.push_back({file, "plugin library " + file + " " + why}); };
  // Loading a library runs its code.
  if (const std::string why = others_can_write(file, "anyone could put code in this job"); !why.empty()) {
    return refuse("is not loaded: " + why);
  }
  // Read before loading: dlopen's own words for a file that is no library are the loader's, not the user's.
  if (const std::string why = not_a_library(file); !why.empty()) return refuse(why);
  auto library = std::make_shared<boost::dll::shared_library>();
  try {
    library->load(fs::path(file), boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    refuse(load_failure(file, e.what()));
    return;
  }
  if (!library->has(PLAIT_PLUGIN_ENTRY_SYMBOL)) {
    refuse("has no entry point plait_plugin_info(); build it with plait_add_plugin() and PLAIT_PLUGIN(...)");
    return;
  }
  const PlaitPluginInfo* info = library->get<const PlaitPluginInfo*()>(PLAIT_PLUGIN_ENTRY_SYMBOL)();
  if (info == nullptr) {
    refuse("returned no plugin info from plait_plugin_info()");
    return;
  }
  if (const std::string why = build_mismatch(*info, host); !why.empty()) {
    refuse(why);
    return;
  }
  const std::string torch_version = str_or_empty(info->torch_version);
  PluginRecord record;
  record.name = str_or_empty(info->name);
  record.kind = str_or_empty(info->kind);
  if (record.name.empty() || record.name == "none") {
    refuse("declares no usable name (\"none\" means no plugin, in every role)");
    return;
  }
  if (std::find(kKinds.begin(), kKinds.end(), record.kind) == kKinds.end()) {
    refuse(concat("declares the unknown kind '", record.kind, "'; kinds are data, comm, pipeline, tensor, offload, adapter"));
    return;
  }
  if (info->create == nullptr || info->destroy == nullptr) {
    refuse("declares no create/destroy functions");
    return;
  }
  if (const PluginRecord* other = find(record.name)) {
    refuse(concat("declares the name '", record.name, "', which ", other->path,
                  " already uses; two plugins cannot share a name"));
    return;
  }
  record.version = str_or_empty(info->version);
  record.path = file;
  record.origin = dir.origin;
  record.torch_version = torch_version;
  record.api_major = info->api_major;
  record.api_minor = info->api_minor;
  record.summary = str_or_empty(info->summary);
  record.schema_toml = str_or_empty(info->schema_toml);
  CapabilityClaims claims = trusted_capabilities(record.kind, record.api_major, record.api_minor,
                                                 split_words(info->capabilities));
  record.capabilities = std::move(claims.trusted);
  record.predated_capabilities = std::move(claims.predated);
  if (info->probe != nullptr) {
    char why[512] = {0};
    record.available = info->probe(why, sizeof(why) - 1) != 0;
    if (!record.available) record.unavailable_reason = why[0] ? why : "its probe says it cannot run here";
  }
  record.library_ = std::move(library);
  record.info_ = info;
  plugins_.push_back(std::move(record));
}

const PluginRecord* PluginRegistry::find(const std::string& name) const {
  for (const auto& p : plugins_) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

const PluginRecord& PluginRegistry::require(const std::string& name, const std::string& kind,
                                            const std::string& where) const {
  const PluginRecord* record = find(name);
  std::vector<std::string> same_kind;
  std::string listing;
  for (const auto& p : plugins_) {
    if (p.kind == kind) same_kind.push_back(p.name);
  }
  for (const auto& n : same_kind) listing += (listing.empty() ? "" : ", ") + n;
  if (listing.empty()) listing = "none";
  if (record == nullptr) {
    std::string searched;
    for (const auto& d : dirs_) searched += "\n    " + d.path + " (" + d.origin + ")";
    throw Error(concat(where, ": unknown ", kind, " plugin '", name, "'", did_you_mean(name, same_kind),
                       "; ", kind, " plugins found: ", listing),
                concat("plugins are searched in:", searched,
                       "\n  add a folder with PLAIT_PLUGIN_PATH or [plugins].paths; `plait plugins` lists them"));
  }
  if (record->kind != kind) {
    throw Error(concat(where, ": plugin '", name, "' is a ", record->kind, " plugin, not a ", kind, " plugin"),
                concat(kind, " plugins found: ", listing));
  }
  if (!record->available) {
    throw Error(concat(where, ": plugin '", name, "' cannot run here: ", record->unavailable_reason),
                "choose another plugin for this machine");
  }
  return *record;
}

void PluginRegistry::throw_if_refused() const {
  if (refusals_.empty()) return;
  std::string message = refusals_.front().reason;
  for (std::size_t i = 1; i < refusals_.size(); ++i) message += "\n" + refusals_[i].reason;
  throw Error(message, "remove or rebuild the library; `plait plugins` lists what was found and refused");
}

void PluginRegistry::require_kind(const PluginRecord& record, const char* kind) const {
  PLAIT_CHECK(record.kind == kind,
              concat("plugin '", record.name, "' (", record.path, ") is a ", record.kind, " plugin, not a ", kind, " plugin"),
              "choose it in the role of its kind; `plait plugins` lists each plugin's kind");
}

std::shared_ptr<void> PluginRegistry::create(const PluginRecord& record) const {
  void* object = nullptr;
  try {
    object = record.info_->create();
  } catch (const std::exception& e) {
    throw Error(concat("plugin '", record.name, "' (", record.path, ") failed in its create: ", e.what()),
                plugin_fault_hint(record.name));
  }
  PLAIT_CHECK(object != nullptr, concat("plugin '", record.name, "' (", record.path, ") created no object"),
              "its create function must return a new instance");
  auto destroy = record.info_->destroy;
  auto library = record.library_;
  return std::shared_ptr<void>(object, [destroy, library](void* p) { destroy(p); });
}

}  // namespace plait
