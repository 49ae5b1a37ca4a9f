#pragma once
// The comparison as one self-contained HTML page: the report's sections as tables, and
// four charts drawn as inline SVG (no script, no network): the losses overlaid, the
// step time stacked by phase per run, the peak memory of every rank, and the bytes of
// every communication operation. Each bar and point carries its number as text.
#include <string>
#include <vector>

#include "compare/comparison.hpp"
#include "compare/report_sections.hpp"

namespace plait::compare {

// How every HTML report begins (an earlier one is recognised by it, and replaced).
inline constexpr const char* kHtmlBegins =
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>plait compare</title>";
std::string render_html(const Comparison& c, const std::vector<Section>& sections);

}  // namespace plait::compare
