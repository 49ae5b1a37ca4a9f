#include "compare/report_html.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "plait/sdk/error.hpp"
#include "util/human_bytes.hpp"

namespace plait::compare {
namespace {

constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
const char* color(std::size_t i) { return kColors[i % (sizeof kColors / sizeof *kColors)]; }

std::string esc(const std::string& text) {
  std::string out;
  for (char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += ch;
    }
  }
  return out;
}

// Coordinates, to a hundredth of a pixel.
std::string num(double v) { return fixed(v, 2); }

// A value as data-value and <title> carry it: whole numbers whole, others to 6 digits.
std::string plain(double v) {
  char buf[64];
  if (std::floor(v) == v && std::fabs(v) < 9.0e15) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  } else {
    std::snprintf(buf, sizeof buf, "%.6g", v);
  }
  return buf;
}

std::string loss_chart(const Comparison& c) {
  const double W = 760, H = 320, left = 60, right = 150, top = 20, bottom = 40;
  double lo = 1e300, hi = -1e300;
  int64_t s0 = INT64_MAX, s1 = INT64_MIN;
  for (const auto& f : c.figures) {
    for (const auto& [step, loss] : f.losses) {
      lo = std::min(lo, loss);
      hi = std::max(hi, loss);
      s0 = std::min(s0, step);
      s1 = std::max(s1, step);
    }
  }
  if (s0 > s1) return "<p>No losses recorded.</p>";
  if (hi <= lo) hi = lo + 1;
  if (s1 == s0) s1 = s0 + 1;
  auto x = [&](double s) { return left + (s - static_cast<double>(s0)) / static_cast<double>(s1 - s0) * (W - left - right); };
  auto y = [&](double l) { return top + (hi - l) / (hi - lo) * (H - top - bottom); };
  std::ostringstream o;
  o << "<svg id=\"loss-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" role=\"img\" aria-label=\"loss per step\">";
  o << "<line x1=\"" << left << "\" y1=\"" << H - bottom << "\" x2=\"" << W - right << "\" y2=\"" << H - bottom
    << "\" stroke=\"#333\"/><line x1=\"" << left << "\" y1=\"" << top << "\" x2=\"" << left << "\" y2=\"" << H - bottom
    << "\" stroke=\"#333\"/>";
  for (int k = 0; k <= 4; ++k) {
    const double l = lo + (hi - lo) * k / 4.0;
    o << "<text class=\"tick\" x=\"" << left - 6 << "\" y=\"" << y(l) + 4 << "\" text-anchor=\"end\">" << fixed(l, 3)
      << "</text>";
    const double s = static_cast<double>(s0) + static_cast<double>(s1 - s0) * k / 4.0;
    o << "<text class=\"tick\" x=\"" << x(s) << "\" y=\"" << H - bottom + 16 << "\" text-anchor=\"middle\">"
      << std::llround(s) << "</text>";
  }
  o << "<text x=\"" << (left + W - right) / 2 << "\" y=\"" << H - 4 << "\" text-anchor=\"middle\">step</text>";
  for (std::size_t k = 0; k < c.figures.size(); ++k) {
    std::string points;
    for (const auto& [step, loss] : c.figures[k].losses) points += num(x(static_cast<double>(step))) + "," + num(y(loss)) + " ";
    o << "<polyline class=\"loss\" data-run=\"" << esc(c.runs[k].name) << "\" fill=\"none\" stroke=\"" << color(k)
      << "\" stroke-width=\"2\" stroke-dasharray=\"" << (k == 0 ? "none" : "6,3") << "\" points=\"" << points << "\"/>";
    const auto& last = c.figures[k].losses.back();
    o << "<text class=\"legend\" x=\"" << W - right + 10 << "\" y=\"" << top + 16 * (k + 1) << "\" fill=\"" << color(k)
      << "\">" << esc(c.runs[k].name) << ": " << fixed(last.second, 4) << "</text>";
  }
  o << "</svg>";
  return o.str();
}

// Horizontal bars, one row per label, each a stack of (name, value) segments.
struct BarRow {
  std::string label;
  std::vector<std::pair<std::string, double>> segments;
  std::string total_text;
};

std::string bar_chart(const std::string& id, const std::vector<BarRow>& rows, const std::vector<std::string>& legend) {
  const double W = 900, label_w = 200, right = 230, row_h = 26, legend_h = 20;
  // The legend's entries, wrapped onto as many lines as the width needs.
  std::vector<std::pair<double, double>> at;  // (x, y) of each entry
  double lx = label_w, ly = 8;
  for (const auto& name : legend) {
    const double w = 16 + 7.0 * static_cast<double>(name.size()) + 14;
    if (lx + w > W && lx > label_w) {
      lx = label_w;
      ly += legend_h;
    }
    at.emplace_back(lx, ly);
    lx += w;
  }
  const double top = legend.empty() ? 10 : ly + legend_h + 6;
  double most = 0;
  for (const auto& r : rows) {
    double sum = 0;
    for (const auto& s : r.segments) sum += s.second;
    most = std::max(most, sum);
  }
  if (most <= 0) most = 1;
  const double H = top + row_h * static_cast<double>(rows.size()) + 10;
  std::ostringstream o;
  o << "<svg id=\"" << id << "\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\">";
  for (std::size_t k = 0; k < legend.size(); ++k) {
    o << "<rect x=\"" << at[k].first << "\" y=\"" << at[k].second << "\" width=\"12\" height=\"12\" fill=\"" << color(k)
      << "\"/><text class=\"legend\" x=\"" << at[k].first + 16 << "\" y=\"" << at[k].second + 10 << "\">" << esc(legend[k])
      << "</text>";
  }
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const double yy = top + row_h * static_cast<double>(r);
    o << "<text class=\"label\" x=\"" << label_w - 8 << "\" y=\"" << yy + 17 << "\" text-anchor=\"end\">"
      << esc(rows[r].label) << "</text>";
    double xx = label_w;
    for (const auto& [name, value] : rows[r].segments) {
      const double w = value / most * (W - label_w - right);
      const auto k = std::find(legend.begin(), legend.end(), name) - legend.begin();
      o << "<rect class=\"bar\" data-name=\"" << esc(name) << "\" data-value=\"" << plain(value) << "\" x=\"" << num(xx)
        << "\" y=\"" << yy + 4 << "\" width=\"" << num(std::max(w, 0.0)) << "\" height=\"" << row_h - 8 << "\" fill=\""
        << color(legend.empty() ? r : static_cast<std::size_t>(k)) << "\"><title>" << esc(name) << ": " << plain(value)
        << "</title></rect>";
      xx += w;
    }
    o << "<text class=\"value\" x=\"" << xx + 6 << "\" y=\"" << yy + 17 << "\">" << esc(rows[r].total_text) << "</text>";
  }
  o << "</svg>";
  return o.str();
}

std::string time_chart(const Comparison& c) {
  std::vector<std::string> phases;
  for (const auto& f : c.figures) {
    for (const auto& [p, ms] : f.breakdown.mean.phases) {
      if (std::find(phases.begin(), phases.end(), p) == phases.end()) phases.push_back(p);
    }
  }
  if (phases.empty()) return "<p>No step-time breakdown recorded.</p>";
  std::vector<BarRow> rows;
  for (std::size_t k = 0; k < c.runs.size(); ++k) {
    const auto& mean = c.figures[k].breakdown.mean;
    rows.push_back({c.runs[k].name, mean.phases, num(mean.step_ms) + " ms"});
  }
  return bar_chart("time-chart", rows, phases);
}

std::string memory_chart(const Comparison& c) {
  std::vector<BarRow> rows;
  for (std::size_t k = 0; k < c.runs.size(); ++k) {
    for (const auto& m : c.figures[k].memory) {
      rows.push_back({c.runs[k].name + " " + m.who, {{c.runs[k].name, static_cast<double>(m.peak)}}, human_bytes(m.peak)});
    }
  }
  std::vector<std::string> legend;
  for (const auto& r : c.runs) legend.push_back(r.name);
  return bar_chart("memory-chart", rows, legend);
}

std::string comm_chart(const Comparison& c) {
  std::vector<BarRow> rows;
  for (std::size_t k = 0; k < c.runs.size(); ++k) {
    for (const auto& op : c.figures[k].comm) {
      rows.push_back({c.runs[k].name + " " + op.key, {{c.runs[k].name, op.bytes_per_step}},
                      human_bytes(static_cast<int64_t>(op.bytes_per_step)) + ", " + num(op.exposed_ms_per_step) + " ms exposed"});
    }
  }
  if (rows.empty()) return "<p>No communication.</p>";
  std::vector<std::string> legend;
  for (const auto& r : c.runs) legend.push_back(r.name);
  return bar_chart("comm-chart", rows, legend);
}

std::string table_html(const Table& t) {
  std::ostringstream o;
  o << "<table><thead><tr>";
  for (const auto& h : t.header) o << "<th>" << esc(h) << "</th>";
  o << "</tr></thead><tbody>";
  for (const auto& r : t.rows) {
    o << "<tr>";
    for (const auto& cell : r) o << "<td>" << esc(cell) << "</td>";
    o << "</tr>";
  }
  o << "</tbody></table>";
  return o.str();
}

std::string chart_for(Chart chart, const Comparison& c) {
  switch (chart) {
    case Chart::losses: return loss_chart(c);
    case Chart::step_time: return time_chart(c);
    case Chart::memory: return memory_chart(c);
    case Chart::communication: return comm_chart(c);
    case Chart::none: break;
  }
  return "";
}

}  // namespace

std::string render_html(const Comparison& c, const std::vector<Section>& sections) {
  std::ostringstream o;
  o << kHtmlBegins << "<style>"
       "body{font-family:sans-serif;margin:24px;color:#222;max-width:1100px}"
       "table{border-collapse:collapse;margin:8px 0 16px}td,th{border:1px solid #ccc;padding:3px 8px;"
       "font-size:13px;text-align:right}td:first-child,th:first-child{text-align:left}"
       "svg{display:block;margin:8px 0 16px;font-size:12px}.tick{font-size:11px;fill:#555}"
       "</style></head><body>\n<h1>plait compare</h1>\n<p>";
  for (std::size_t k = 0; k < c.runs.size(); ++k) {
    o << (k ? ", " : "") << "<span style=\"color:" << color(k) << "\">" << esc(c.runs[k].name) << "</span>";
  }
  o << "</p>\n";
  for (const auto& s : sections) {
    o << "<h2>" << esc(s.title) << "</h2>\n";
    for (const auto& line : s.sentences) o << "<p>" << esc(line) << "</p>\n";
    o << chart_for(s.chart, c) << "\n";
    for (const auto& t : s.tables) {
      if (!t.rows.empty()) o << table_html(t) << "\n";
    }
  }
  o << "</body></html>\n";
  return o.str();
}

}  // namespace plait::compare
