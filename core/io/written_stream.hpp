#pragma once
// The end of a file written through a std::ofstream: flushed, and when any write failed
// (a full disk, a file-size limit) the file is removed and the failure named with the
// system's reason, so that nothing half-written stays behind under a name.
#include <fstream>
#include <string>

namespace plait {

void check_written(std::ofstream& out, const std::string& path, const std::string& hint);

}  // namespace plait
