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

// A duration as a report prints it: "0.46 s", "2.8 s", "95 s" (two significant digits,
// or whole seconds from 10 on).
inline std::string seconds_text(double s) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), s >= 10 ? "%.0f s" : "%.2g s", s);
  return buf;
}

}  // namespace plait
