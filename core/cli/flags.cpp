#include "cli/flags.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <regex>

#include <CLI/CLI.hpp>

#include "plait/sdk/error.hpp"
#include "util/abbreviate.hpp"
#include "util/did_you_mean.hpp"

namespace plait::cli {
namespace {

// Each number flag's example, of its own scale: a tolerance is tiny, a shard is megabytes.
std::string example_of(const std::string& flag) {
  static const std::map<std::string, std::string> examples = {
      {"--tolerance", "1e-5"}, {"--loss-gap", "0.05"}, {"--wait", "10"}, {"--shard-mb", "5000"}};
  const auto it = examples.find(flag);
  return it == examples.end() ? "" : concat(", e.g. ", flag, " ", it->second);
}

}  // namespace

std::optional<int64_t> integer_flag(const std::string& flag, const std::optional<std::string>& text, int64_t min,
                                    int64_t max) {
  if (!text) return std::nullopt;
  const std::string shown = abbreviate(*text, 40);
  int64_t value = 0;
  const char* end = text->data() + text->size();
  const auto [ptr, ec] = std::from_chars(text->data(), end, value);
  PLAIT_CHECK(ec != std::errc::invalid_argument && ptr == end, concat(flag, " ", shown, ": expected a whole number"),
              concat(flag, " takes an integer from ", min, " to ", max));
  PLAIT_CHECK(ec != std::errc::result_out_of_range && value >= min && value <= max,
              concat(flag, " ", shown, " is out of range: it takes ", min, " to ", max),
              concat("give ", flag, " a whole number from ", min, " to ", max, ", or leave it out for the default"));
  return value;
}

std::vector<int64_t> integer_list_flag(const std::string& flag, const std::optional<std::string>& text, int64_t min,
                                       int64_t max) {
  std::vector<int64_t> out;
  if (!text) return out;
  std::size_t from = 0;
  while (from <= text->size()) {
    const std::size_t comma = std::min(text->find(',', from), text->size());
    const std::string item = text->substr(from, comma - from);
    PLAIT_CHECK(!item.empty(), concat(flag, " ", abbreviate(*text, 40), ": an empty item (two commas, or one at an end)"),
                concat(flag, " takes whole numbers separated by commas", example_of(flag)));
    const int64_t value = *integer_flag(flag, item, min, max);
    PLAIT_CHECK(std::find(out.begin(), out.end(), value) == out.end(),
                concat(flag, " ", abbreviate(*text, 40), ": ", value, " is given twice"), "give each value once");
    out.push_back(value);
    from = comma + 1;
  }
  return out;
}

std::optional<double> fraction_flag(const std::string& flag, const std::optional<std::string>& text) {
  const std::optional<double> value = positive_number_flag(flag, text);
  PLAIT_CHECK(!value || *value < 1.0,
              concat(flag, " ", abbreviate(*text, 40), ": a relative difference of 1 or more lets anything pass"),
              concat(flag, " takes a fraction below 1", example_of(flag)));
  return value;
}

std::optional<double> positive_number_flag(const std::string& flag, const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  const std::string shown = abbreviate(*text, 40);
  char* end = nullptr;
  const double value = std::strtod(text->c_str(), &end);
  const std::string hint = concat(flag, " takes a number above 0", example_of(flag));
  PLAIT_CHECK(!text->empty() && end == text->c_str() + text->size(), concat(flag, " ", shown, ": expected a number"), hint);
  PLAIT_CHECK(std::isfinite(value) && value > 0.0, concat(flag, " ", shown, " must be a finite number above 0"), hint);
  return value;
}

std::string chosen_command(const CLI::App& app) {
  std::string words = "plait";
  const CLI::App* at = &app;
  while (true) {
    const auto chosen = at->get_subcommands();
    if (chosen.empty()) return words;
    at = chosen.front();
    words += " " + at->get_name();
  }
}

namespace {

// What the chosen command takes, for "did you mean" and for saying what it takes.
struct Taken {
  std::string command;                    // "plait run"
  std::vector<std::string> options;       // "--steps", "-v", ... (option groups' too)
  std::vector<std::string> switches;      // of them, those that take no value ("--quick")
  std::vector<std::string> positionals;   // "config"
  std::vector<std::string> subcommands;   // "run", "check", ... (when none was chosen)
  std::vector<std::string> extras;        // the words nobody took, in order
};

void add_options(const CLI::App& app, Taken& t) {
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_positional() && o->get_lnames().empty() && o->get_snames().empty()) {
      t.positionals.push_back(o->get_name(true));
      continue;
    }
    std::vector<std::string> names;
    for (const auto& l : o->get_lnames()) names.push_back("--" + l);
    for (const auto& s : o->get_snames()) names.push_back("-" + s);
    t.options.insert(t.options.end(), names.begin(), names.end());
    if (o->get_expected_max() == 0) t.switches.insert(t.switches.end(), names.begin(), names.end());
  }
  for (const CLI::App* group : app.get_subcommands([](const CLI::App* a) { return a->get_name().empty(); })) {
    add_options(*group, t);
  }
}

Taken taken_by(const CLI::App& app) {
  Taken t;
  t.command = chosen_command(app);
  t.extras = app.remaining(true);
  const CLI::App* at = &app;
  while (!at->get_subcommands().empty()) at = at->get_subcommands().front();
  add_options(*at, t);
  for (const CLI::App* sub : at->get_subcommands([](const CLI::App* a) { return !a->get_name().empty(); })) {
    t.subcommands.push_back(sub->get_name());
  }
  return t;
}

// "[--hf,--peft]" -> "--hf or --peft"
std::string alternatives(const std::string& list) {
  std::vector<std::string> names;
  std::string name;
  for (char c : list + ",") {
    if (c != ',') {
      name += c;
    } else if (!name.empty()) {
      names.push_back(name), name.clear();
    }
  }
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return out;
}

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
}

// A word nobody took: an option the command does not have, a command plait does not
// have, or one argument too many.
std::string unexpected(const Taken& t, const std::string& message) {
  std::string word = t.extras.empty() ? message.substr(message.rfind(' ') + 1) : t.extras.front();
  word = abbreviate(word, 60);
  if (word.rfind('-', 0) == 0) {
    const std::string bare = word.substr(0, word.find('='));
    return concat(t.command, " has no option ", bare, did_you_mean(bare, t.options));
  }
  if (!t.subcommands.empty()) {
    return concat(t.command, " has no command '", word, "'", did_you_mean(word, t.subcommands), "; its commands are ",
                  joined(t.subcommands));
  }
  if (t.positionals.empty()) return concat(t.command, " takes no arguments, only options: '", word, "' is not one");
  return concat(t.command, " takes ", joined(t.positionals), " and no more: '", word, "' is one too many");
}

std::string required(const Taken& t, const std::string& m) {
  std::smatch g;
  if (m == "A subcommand is required") return concat(t.command, " needs a command: one of ", joined(t.subcommands));
  if (std::regex_match(m, g, std::regex(R"(Exactly 1 option from \[(.*)\] is required and (\d+) were given)"))) {
    return concat(t.command, " takes one of ", alternatives(g[1]), ", and ", g[2].str(), " were given: choose one");
  }
  if (std::regex_match(m, g, std::regex(R"((?:Exactly|At least) 1 option from \[(.*)\] is required)"))) {
    return concat(t.command, " needs ", alternatives(g[1]));
  }
  if (std::regex_match(m, g, std::regex(R"(Requires at most (\d+) options? be (?:given|used).* from \[(.*)\])"))) {
    return concat(t.command, " takes at most ", g[1].str(), " of ", alternatives(g[2]));
  }
  if (std::regex_match(m, g, std::regex(R"((\S+) is required)"))) {
    const std::string name = g[1];
    return name.rfind('-', 0) == 0 ? concat(t.command, " needs ", name) : concat(t.command, " needs its ", name, " argument");
  }
  return concat(t.command, ": ", m);
}

std::string mismatch(const Taken& t, const std::string& m) {
  std::smatch g;
  if (std::regex_match(m, g, std::regex(R"((\S+): At Most (\d+) required but received (\d+))"))) {
    return g[2] == "1" ? concat(t.command, ": ", g[1].str(), " is given ", g[3].str(), " times, and it takes one value: give it once")
                       : concat(t.command, ": ", g[1].str(), " takes at most ", g[2].str(), " values, and got ", g[3].str());
  }
  if (std::regex_match(m, g, std::regex(R"((\S+): (?:At least )?(\d+) required.*(?:missing|received (\d+)))"))) {
    return concat(t.command, ": ", g[1].str(), " needs a value after it");
  }
  if (std::regex_match(m, g, std::regex(R"(Expected (?:exactly|at least) (\d+) arguments to (\S+), got (\d+))"))) {
    return concat(t.command, ": ", g[2].str(), " takes ", g[1].str(), " values, and got ", g[3].str());
  }
  if (std::regex_match(m, g, std::regex(R"((\S+) was given a disallowed flag override)"))) {
    return concat(t.command, ": ", g[1].str(), " is a switch: it takes no value");
  }
  return concat(t.command, ": ", m);
}

std::string value_refused(const Taken& t, const std::string& m) {
  std::smatch g;
  if (std::regex_match(m, g, std::regex(R"((\S+): (.*) not in \{(.*)\})"))) {
    return concat(t.command, ": ", g[1].str(), " ", abbreviate(g[2], 40), " is not one of ", alternatives(g[3]));
  }
  if (std::regex_match(m, g, std::regex(R"(Could not convert: (\S+) = (.*))")) ||
      std::regex_match(m, g, std::regex(R"(The value (.*) is not an allowed value for (\S+))"))) {
    const bool named_first = m.rfind("Could", 0) == 0;
    const std::string flag = named_first ? g[1] : g[2], value = named_first ? g[2] : g[1];
    return concat(t.command, ": ", flag, " cannot take '", abbreviate(value, 40), "'",
                  std::find(t.switches.begin(), t.switches.end(), flag) != t.switches.end() ? " (a switch takes no value)" : "");
  }
  if (std::regex_match(m, g, std::regex(R"((\S+): (?:too many inputs for a flag|Should be true/false or a number))"))) {
    return concat(t.command, ": ", g[1].str(), " is a switch: it takes no value");
  }
  return concat(t.command, ": ", m);
}

// Two flags that go only together, or never together.
std::string pairing(const Taken& t, const std::string& m, bool excludes) {
  std::smatch g;
  if (excludes && std::regex_match(m, g, std::regex(R"((\S+) excludes (\S+))"))) {
    return concat(t.command, ": ", g[1].str(), " and ", g[2].str(), " cannot be given together");
  }
  if (!excludes && std::regex_match(m, g, std::regex(R"((\S+) requires (\S+))"))) {
    return concat(t.command, ": ", g[1].str(), " is taken only with ", g[2].str());
  }
  return concat(t.command, ": ", m);
}

}  // namespace

std::string usage_problem(const CLI::ParseError& e, const CLI::App& app) {
  const Taken t = taken_by(app);
  const std::string m = e.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) return unexpected(t, m);
  if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr) return required(t, m);
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr) return mismatch(t, m);
  if (dynamic_cast<const CLI::ValidationError*>(&e) != nullptr || dynamic_cast<const CLI::ConversionError*>(&e) != nullptr) {
    return value_refused(t, m);
  }
  if (dynamic_cast<const CLI::ExcludesError*>(&e) != nullptr) return pairing(t, m, /*excludes=*/true);
  if (dynamic_cast<const CLI::RequiresError*>(&e) != nullptr) return pairing(t, m, /*excludes=*/false);
  return concat(t.command, " cannot read its command line: ", m);
}

}  // namespace plait::cli
