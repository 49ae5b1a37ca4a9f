#include "io/written_stream.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "plait/sdk/error.hpp"

namespace plait {

void check_written(std::ofstream& out, const std::string& path, const std::string& hint) {
  out.flush();
  if (out.good()) return;
  const std::string why = errno != 0 ? std::strerror(errno) : "the write failed";
  out.close();
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
  throw Error(concat("writing ", path, " failed: ", why), hint);
}

}  // namespace plait
