#pragma once
// Whole files and logs read back as text, for the commands that start plait processes
// and report what those said.
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <string>
#include <string_view>

namespace plait {

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The first line of `log` holding one of `marks`, from the mark on ("error: no such
// key"), or "" when none does: why a process failed, in its own words.
inline std::string first_marked_line(const std::filesystem::path& log, std::initializer_list<std::string_view> marks) {
  std::ifstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    for (const auto mark : marks) {
      const auto at = line.find(mark);
      if (at != std::string::npos) return line.substr(at);
    }
  }
  return "";
}

}  // namespace plait
