#pragma once
// What toml++ found wrong with a file, in plait's words: the library's "Error while parsing
// table header: expected ']', saw '\n'" becomes "a table header: ']' is missing before the
// line's end". Callers put it after the file:line:column ("<file>:1:7: invalid TOML in ").
#include <regex>
#include <string>

#include "plait/sdk/error.hpp"

namespace plait {

// A character toml++ quotes ('\n', 'x') as a reader names it.
inline std::string toml_seen(const std::string& quoted) {
  if (quoted == "'\\n'" || quoted == "'\\r'") return "the line's end";
  if (quoted == "end-of-file" || quoted == "'\\0'") return "the file's end";
  return quoted;
}

// `without_content`: a file that is not TOML at all (reached by extends) keeps its bytes
// to itself: what was found is not echoed.
inline std::string toml_problem(const std::string& description, bool without_content = false) {
  std::smatch m;
  std::string where, rest = description;
  if (std::regex_search(description, m, std::regex(R"(^Error while parsing ([^:]+): (.*)$)"))) {
    where = m[1].str();
    rest = m[2].str();
  }
  std::string problem;
  if (std::regex_search(rest, m, std::regex(R"(^expected (.+), saw (.+)$)"))) {
    problem = without_content ? concat(m[1].str(), " expected, not found")
                              : concat(m[1].str(), " expected, found ", toml_seen(m[2].str()));
  } else if (std::regex_search(rest, m, std::regex(R"(cannot redefine existing (\w+) '([^']*)')"))) {
    problem = concat("'", m[2].str(), "' is defined twice (a key or table is defined once)");
  } else if (rest.find("unescaped control characters") != std::string::npos) {
    problem = "a string is not closed before the line's end (or holds a control character)";
  } else if (std::regex_search(rest, m, std::regex(R"(^encountered end-of-file)"))) {
    problem = "the file ends in the middle of it";
  } else {
    static const std::regex quoted(R"((saw|found|got|character|encountered) ('[^']*'|"[^"]*"))");
    problem = without_content ? std::regex_replace(rest, quoted, "$1 something else") : rest;
  }
  return where.empty() ? problem : concat("a ", where, ": ", problem);
}

}  // namespace plait
