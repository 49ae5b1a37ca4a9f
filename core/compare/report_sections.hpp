#pragma once
// A comparison as sections of sentences and tables, the content every report format
// shares: the terminal and Markdown lay these out as they are, the HTML page adds charts.
#include <string>
#include <vector>

#include "compare/comparison.hpp"

namespace plait::compare {

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

// The chart a richer format draws with a section's tables.
enum class Chart { none, losses, step_time, memory, communication };

struct Section {
  std::string title;
  std::vector<std::string> sentences;  // before the tables
  std::vector<Table> tables;
  Chart chart = Chart::none;
};

std::vector<Section> report_sections(const Comparison& c);

// The sentence that answers "are these runs equivalent?".
std::string loss_verdict(const Comparison& c);

// Renderings of the sections: aligned columns for a terminal; GitHub Markdown.
std::string render_terminal(const std::vector<Section>& sections);
// How every Markdown report begins (an earlier one is recognised by it, and replaced).
inline constexpr const char* kMarkdownBegins = "# plait compare\n";
std::string render_markdown(const std::vector<Section>& sections);

// A number with `digits` decimals, as every report format writes them.
std::string fixed(double v, int digits);

}  // namespace plait::compare
