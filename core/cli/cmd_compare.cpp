#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/commands.hpp"
#include "compare/comparison.hpp"
#include "compare/report_html.hpp"
#include "compare/report_sections.hpp"
#include "plait/sdk/error.hpp"
#include "output/run_folder.hpp"
#include "util/writable_folder.hpp"

namespace plait::cli {

namespace {

// A report file: in a folder that takes a write, and not some other file of the user's
// (an earlier report of plait compare is replaced, as a rerun expects).
void check_report_file(const std::string& path, const std::string& flag, const std::string& report_begins) {
  check_file_writable(path, flag);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return;
  std::ifstream in(path, std::ios::binary);
  std::string head(report_begins.size(), '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  PLAIT_CHECK(in && head == report_begins,
              concat(flag, " ", path, ": the file exists and is not a report of plait compare: it would be replaced"),
              concat("name a new file (an earlier report of plait compare is replaced)"));
}

}  // namespace

int compare(const CompareArgs& args) {
  // Before the comparison: a report that cannot be written is found at once.
  if (!args.markdown.empty()) check_report_file(args.markdown, "--markdown", compare::kMarkdownBegins);
  if (!args.html.empty()) check_report_file(args.html, "--html", compare::kHtmlBegins);
  const compare::Comparison c = compare::compare_runs(compare::load_runs(compare::expand_run_folders(args.runs)));
  const std::vector<compare::Section> sections = compare::report_sections(c);
  std::cout << compare::render_terminal(sections);
  if (!args.markdown.empty()) write_file_atomically(args.markdown, compare::render_markdown(sections));
  if (!args.html.empty()) write_file_atomically(args.html, compare::render_html(c, sections));
  return 0;
}

}  // namespace plait::cli
