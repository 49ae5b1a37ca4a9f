#include "util/search_path.hpp"

#include <cstdlib>
#include <sstream>

#include <boost/dll/runtime_symbol_info.hpp>

namespace plait {

std::filesystem::path install_prefix() {
  const std::filesystem::path exe = boost::dll::program_location();
  return exe.parent_path().parent_path().lexically_normal();
}

std::vector<std::string> env_path_list(const char* variable) {
  std::vector<std::string> out;
  const char* value = std::getenv(variable);
  if (value == nullptr) return out;
  std::stringstream in(value);
  std::string dir;
  while (std::getline(in, dir, ':')) {
    if (!dir.empty()) out.push_back(dir);
  }
  return out;
}

}  // namespace plait
