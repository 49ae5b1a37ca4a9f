#pragma once
// A number as a message shows it: "0.0006", "1e+308", "nan".
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace plait {

// A positive number to `digits` significant digits in fixed form, never an exponent:
// fixed_digits(0.000399, 2) == "0.00040", fixed_digits(0.244, 3) == "0.244".
inline std::string fixed_digits(double x, int digits) {
  char buf[48];
  const int decimals = std::max(0, digits - 1 - static_cast<int>(std::floor(std::log10(x))));
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, x);
  return buf;
}

inline std::string short_number(double x, int digits = 6) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.*g", digits, x);
  return buf;
}

// A duration as a report prints it: "0.46 s", "2.8 s", "95 s", "0.0000038 s" (two
// significant digits, or whole seconds from 10 on; never in exponent form).
inline std::string seconds_text(double s) {
  if (s > 0 && s < 1e-4) return fixed_digits(s, 2) + " s";  // %g would turn to an exponent
  char buf[40];
  std::snprintf(buf, sizeof(buf), s >= 10 ? "%.0f s" : "%.2g s", s);
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
