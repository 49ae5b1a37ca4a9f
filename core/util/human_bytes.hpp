#pragma once
// A byte count as a message shows it: "512 B", "3.5 KiB", "4.0 MiB", "1.25 GiB".
#include <cstdint>
#include <cstdio>
#include <string>

namespace plait {

inline std::string human_bytes(int64_t b) {
  char buf[32];
  const auto x = static_cast<double>(b);
  if (b >= (int64_t{1} << 30)) std::snprintf(buf, sizeof(buf), "%.2f GiB", x / (1 << 30));
  else if (b >= (1 << 20)) std::snprintf(buf, sizeof(buf), "%.1f MiB", x / (1 << 20));
  else if (b >= 1024) std::snprintf(buf, sizeof(buf), "%.1f KiB", x / 1024);
  else std::snprintf(buf, sizeof(buf), "%lld B", static_cast<long long>(b));
  return buf;
}

}  // namespace plait
