#pragma once
// The one exception type of plait. A message says what was wrong and where (the user's
// file:line, flag, rank or plugin); a hint says what to do about it. Plugins throw it
// too; the core adds rank and plugin name. Where in plait's own (or a plugin's) source
// the error was raised is its origin: it goes to debug logs, never into the message.
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "plait/sdk/version.hpp"

namespace plait {

class PLAIT_SDK_VISIBLE Error : public std::runtime_error {
 public:
  explicit Error(std::string message, std::string hint = {}, std::string origin = {})
      : std::runtime_error(std::move(message)), hint_(std::move(hint)), origin_(std::move(origin)) {}
  const std::string& hint() const noexcept { return hint_; }
  // "core/model/model_spec.cpp:70", or empty.
  const std::string& origin() const noexcept { return origin_; }

 private:
  std::string hint_;
  std::string origin_;
};

// concat("a", 1, 'b') -> "a1b": message building without <format> (not in GCC 12).
template <class... Args>
std::string concat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

// Checks deep in the code know what is wrong but not which config line asked for it;
// their caller does: at_place runs `fn`, and a plait::Error it throws comes out as
// "<place>: <message>", hint and origin kept.
template <class Fn>
auto at_place(const std::string& place, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const Error& e) {
    throw Error(place + ": " + e.what(), e.hint(), e.origin());
  }
}

}  // namespace plait

// Fail fast with a message and a hint; the source file and line become the origin.
#define PLAIT_CHECK(cond, message, hint)                                                        \
  do {                                                                                          \
    if (!(cond)) {                                                                              \
      throw ::plait::Error(::plait::concat(message), hint, ::plait::concat(__FILE__, ":", __LINE__)); \
    }                                                                                           \
  } while (false)
