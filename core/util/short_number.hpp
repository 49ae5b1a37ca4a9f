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

// A duration as a report prints it: "0.46 s", "2.8 s", "95 s", "0.0000038 s" (two
// significant digits, or whole seconds from 10 on; never in exponent form).
inline std::string seconds_text(double s) {
  char buf[40];
  if (s > 0 && s < 1e-4) {
    int decimals = 5;
    for (double x = s * 1e5; x < 10 && decimals < 12; x *= 10) ++decimals;
    std::snprintf(buf, sizeof(buf), "%.*f s", decimals, s);
  } else {
    std::snprintf(buf, sizeof(buf), s >= 10 ? "%.0f s" : "%.2g s", s);
  }
  return buf;
}

// A rate as a report prints it: "950.2", "268.8k", "16.59M" (four significant digits: a
// prediction's further digits are not figures, and a column of them stays narrow).
inline std::string rate_text(double x) {
  const double size = x < 0 ? -x : x;
  const char* suffix = size >= 1e9 ? "G" : size >= 1e6 ? "M" : size >= 1e3 ? "k" : "";
  const double scaled = size >= 1e9 ? x / 1e9 : size >= 1e6 ? x / 1e6 : size >= 1e3 ? x / 1e3 : x;
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.4g%s", scaled, suffix);
  return buf;
}

}  // namespace plait
