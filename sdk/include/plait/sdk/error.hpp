#pragma once
// The one exception type of plait. A message says what was wrong and where; a hint
// says what to do about it. Plugins throw it too; the core adds rank and plugin name.
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "plait/sdk/version.hpp"

namespace plait {

class PLAIT_SDK_VISIBLE Error : public std::runtime_error {
 public:
  explicit Error(std::string message, std::string hint = {})
      : std::runtime_error(std::move(message)), hint_(std::move(hint)) {}
  const std::string& hint() const noexcept { return hint_; }

 private:
  std::string hint_;
};

// concat("a", 1, 'b') -> "a1b": message building without <format> (not in GCC 12).
template <class... Args>
std::string concat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

}  // namespace plait

// Fail fast with file:line, a message and a hint.
#define PLAIT_CHECK(cond, message, hint)                                                  \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      throw ::plait::Error(::plait::concat(__FILE__, ":", __LINE__, ": ", message), hint); \
    }                                                                                     \
  } while (false)
