#pragma once
// Finds plugin libraries, checks each at the C boundary before any C++ call, and makes
// plugin objects that keep their library loaded for as long as they live.
//
// Search order: the built-in folder, then PLAIT_PLUGIN_PATH (':'-separated), then
// [plugins].paths of the config. (Boost.DLL runs on std::filesystem: BOOST_DLL_USE_STD_FS
// is set for the whole target.) A file is a plugin candidate when its name starts with
// "libplait_plugin_" and ends with ".so". A candidate that cannot be used (no entry,
// another API major or a newer minor, other LibTorch, other C++ ABI, a name already
// taken) is refused with one sentence naming the file; `plait run` stops on any refusal.
// A plugin of the same major and an older minor loads (the promise of version.hpp).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "plait/sdk/plugin_abi.h"

namespace boost::dll {
class shared_library;
}

namespace plait {

struct HostAbi {
  uint32_t api_major = 0;
  uint32_t api_minor = 0;
  std::string torch_version;
  int cxx11_abi = 0;
};

struct SearchDir {
  std::string path;
  std::string origin;  // "built-in", "PLAIT_PLUGIN_PATH", "configs/x.toml:4:1"
};

struct PluginRecord {
  std::string name;
  std::string version;
  std::string kind;
  std::string path;
  std::string origin;
  std::string torch_version;
  uint32_t api_major = 0, api_minor = 0;  // the plugin API it was built against
  std::string summary;
  std::string schema_toml;
  std::vector<std::string> capabilities;  // the words the core trusts (loader/capability_versions.hpp)
  std::vector<std::string> predated_capabilities;  // listed, but older than the API that gave them meaning
  bool available = true;
  std::string unavailable_reason;

  bool has_capability(const std::string& word) const;
  // Why the core does not count on `word`: "it lacks the capability 'w'", or that it is
  // listed but older than the API that gave it meaning.
  std::string lacking(const std::string& word) const;

 private:
  friend class PluginRegistry;
  std::shared_ptr<boost::dll::shared_library> library_;
  const PlaitPluginInfo* info_ = nullptr;
};

struct Refusal {
  std::string path;
  std::string reason;  // one sentence, naming the file
};

class PluginRegistry {
 public:
  static PluginRegistry discover(const std::vector<SearchDir>& dirs, const HostAbi& host);

  const std::vector<PluginRecord>& plugins() const { return plugins_; }
  const std::vector<Refusal>& refusals() const { return refusals_; }
  const PluginRecord* find(const std::string& name) const;

  // The plugin of `kind` named `name`, or an error that lists what was found.
  // `where` says who asked, e.g. "configs/q.toml:7:1: [parallel].data".
  const PluginRecord& require(const std::string& name, const std::string& kind, const std::string& where) const;

  // Throws the refusals as one error (run stops on them; `plait plugins` only lists them).
  void throw_if_refused() const;

  // A new instance of the kind `Interface`, or an error when the record is of another
  // kind. The deleter runs the plugin's own destroy and then releases the library, so the
  // library outlives the object. Not configured yet (plugin_instance.hpp does that).
  template <class Interface>
  std::shared_ptr<Interface> make(const PluginRecord& record) const {
    require_kind(record, Interface::kKind);
    return std::static_pointer_cast<Interface>(create(record));
  }

  // The folders searched, in order.
  const std::vector<SearchDir>& search_dirs() const { return dirs_; }

 private:
  void consider(const std::string& file, const SearchDir& dir, const HostAbi& host);
  void require_kind(const PluginRecord& record, const char* kind) const;
  std::shared_ptr<void> create(const PluginRecord& record) const;

  std::vector<SearchDir> dirs_;
  std::vector<PluginRecord> plugins_;
  std::vector<Refusal> refusals_;
};

// The built-in plugin folder: <folder of the running executable>/../lib/plait/plugins.
std::string builtin_plugin_dir();

// Built-in folder + PLAIT_PLUGIN_PATH + the given config folders.
std::vector<SearchDir> default_search_dirs(const std::vector<SearchDir>& from_config);

}  // namespace plait
