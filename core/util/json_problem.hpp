#pragma once
// What nlohmann-json says went wrong with a document, in words for the user: its
// "[json.exception.parse_error.101] " prefix (the library's own classification) is
// dropped; the rest ("parse error at line 1, column 9: syntax error ...") stays.
#include <exception>
#include <string>

namespace plait {

inline std::string json_problem(const std::exception& e) {
  std::string what = e.what();
  if (what.rfind("[json.exception.", 0) == 0) {
    if (const auto close = what.find("] "); close != std::string::npos) what = what.substr(close + 2);
  }
  return what;
}

}  // namespace plait
