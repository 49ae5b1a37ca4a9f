#pragma once
// `plait new plugin`: an out-of-tree plugin project written from the templates in
// share/plait/templates (sdk/templates in the source): a CMakeLists.txt that finds this
// plait, a working minimal strategy of the kind, its schema, a README, a config that
// uses it and a test script that builds it and runs `plait verify --quick`.
#include <string>

namespace plait::scaffold {

struct NewPlugin {
  std::string name;  // the plugin's name, e.g. "my-ddp"
  std::string kind;  // data, pipeline, offload, comm
  std::string from;  // "" or "sharding" (a data plugin on plait::sharding)
  std::string dir;   // where to write it; "" means ./<name>
};

// Writes the project and returns its folder. Refuses, before writing anything, a bad
// name, an unknown kind or template, and a folder that exists and is not empty; the
// project appears whole or not at all.
std::string write_plugin_project(const NewPlugin& request);

// "a data plugin", "an adapter plugin".
std::string plugin_of_kind(const std::string& kind);

// "my-ddp" -> "MyDdp".
std::string class_name(const std::string& plugin_name);

}  // namespace plait::scaffold
