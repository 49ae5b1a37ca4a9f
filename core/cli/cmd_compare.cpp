#include <filesystem>
#include <iostream>

#include "cli/commands.hpp"
#include "compare/comparison.hpp"
#include "compare/report_html.hpp"
#include "compare/report_sections.hpp"
#include "plait/sdk/error.hpp"
#include "run/run_folder.hpp"

namespace plait::cli {

int compare(const CompareArgs& args) {
  // Before the comparison: a report that cannot be written is found at once.
  if (!args.markdown.empty()) at_place("--markdown", [&] { check_file_can_be_written(args.markdown); });
  if (!args.html.empty()) at_place("--html", [&] { check_file_can_be_written(args.html); });
  const compare::Comparison c = compare::compare_runs(compare::load_runs(compare::expand_run_folders(args.runs)));
  const std::vector<compare::Section> sections = compare::report_sections(c);
  std::cout << compare::render_terminal(sections);
  if (!args.markdown.empty()) write_file_atomically(args.markdown, compare::render_markdown(sections));
  if (!args.html.empty()) write_file_atomically(args.html, compare::render_html(c, sections));
  return 0;
}

}  // namespace plait::cli
