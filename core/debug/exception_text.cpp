#include "debug/exception_text.hpp"

#include <regex>

#include <c10/util/Exception.h>

namespace plait {

std::string exception_first_line(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  const std::string what = c10_error != nullptr ? c10_error->what_without_backtrace() : e.what();
  // gloo starts its messages with the source line that raised them, "[/pytorch/third_party/
  // gloo/.../unbound_buffer.cc:78] Timed out ...": the words after it are the user's.
  static const std::regex source_line(R"(\[[^\]\s]*\.(cc|cpp|h|hpp):[0-9]+\] )");
  return std::regex_replace(what.substr(0, what.find('\n')), source_line, "");
}

}  // namespace plait
