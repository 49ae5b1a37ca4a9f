#pragma once
// A number as a message shows it: "0.0006", "1e+308", "nan".
#include <cstdio>
#include <string>

namespace plait {

inline std::string short_number(double x, int digits = 6) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.*g", digits, x);
  return buf;
}

}  // namespace plait
