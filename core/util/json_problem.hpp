#pragma once
// What nlohmann-json found wrong with a document, in plait's words: the library's
// "[json.exception.parse_error.101] parse error at line 1, column 9: syntax error while
// parsing value - invalid literal; last read: 'x'" becomes "it is damaged at line 1,
// column 9: 'x' is not JSON there". Callers put it after the file's name ("<path> is not
// valid JSON: "), so that the sentence names the file, the place, and that it is damaged.
#include <exception>
#include <regex>
#include <string>

#include "plait/sdk/error.hpp"
#include "util/abbreviate.hpp"

namespace plait {

// The problem alone, without where: "it ends early (cut short)", "a string stands where a
// number belongs", "it lacks the key 'step'".
inline std::string json_fault(const std::string& what) {
  std::smatch m;
  if (what.find("unexpected end of input") != std::string::npos) return "it ends early (cut short)";
  if (what.find("empty input") != std::string::npos) return "it is empty";
  if (what.find("missing closing quote") != std::string::npos) return "a string has no closing quote (cut short?)";
  if (std::regex_search(what, m, std::regex(R"(last read: '(.*)')"))) {
    // What the library read since the last token may span several: the word it failed on is last.
    const std::string read = m[1].str();
    const auto space = read.find_last_of(" \t\n");
    return concat("'", abbreviate(space == std::string::npos ? read : read.substr(space + 1), 40), "' is not JSON there");
  }
  if (std::regex_search(what, m, std::regex(R"(type must be (\w+), but is (\w+))"))) {
    auto a = [](const std::string& noun) { return (std::string("aeiou").find(noun[0]) != std::string::npos ? "an " : "a ") + noun; };
    return concat(a(m[2].str()), " stands where ", a(m[1].str()), " belongs");
  }
  if (std::regex_search(what, m, std::regex(R"(key '([^']*)' not found)"))) return concat("it lacks the key '", m[1].str(), "'");
  if (std::regex_search(what, m, std::regex(R"(cannot use [\w\[\]]+\(?\)? with (\w+))"))) {
    return concat("it holds ", m[1].str(), " where an object or a list belongs");
  }
  if (what.find("invalid UTF-8") != std::string::npos) return "it holds bytes that are not UTF-8 text";
  std::string rest = what;
  if (rest.rfind("[json.exception.", 0) == 0) rest = rest.substr(rest.find("] ") + 2);
  return rest;
}

// "it is damaged at line 3, column 5: 'x' is not JSON there", or without the place when
// the library gives none (a value of the wrong type).
inline std::string json_problem(const std::exception& e) {
  const std::string what = e.what();
  std::smatch m;
  if (std::regex_search(what, m, std::regex(R"(at line (\d+), column (\d+))"))) {
    // The end of the input before the first byte: nothing there at all.
    if (m[1] == "1" && m[2] == "1" && what.find("unexpected end of input") != std::string::npos) return "it is empty";
    return concat("it is damaged at line ", m[1].str(), ", column ", m[2].str(), ": ", json_fault(what));
  }
  return concat("it is damaged: ", json_fault(what));
}

}  // namespace plait
