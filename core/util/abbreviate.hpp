#pragma once
// Long text a message would echo (a value, a flag, a name), cut to what a reader needs.
#include <cstddef>
#include <string>

namespace plait {

// `text` itself when it is at most `limit` characters; else its start and how long it was:
// "aaaa... (102400 characters)".
inline std::string abbreviate(const std::string& text, std::size_t limit = 80) {
  if (text.size() <= limit) return text;
  return text.substr(0, limit) + "... (" + std::to_string(text.size()) + " characters)";
}

}  // namespace plait
