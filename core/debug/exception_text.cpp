#include "debug/exception_text.hpp"

#include <c10/util/Exception.h>

namespace plait {

std::string exception_first_line(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  const std::string what = c10_error != nullptr ? c10_error->what_without_backtrace() : e.what();
  return what.substr(0, what.find('\n'));
}

}  // namespace plait
