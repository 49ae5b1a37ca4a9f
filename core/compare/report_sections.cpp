#include "compare/report_sections.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "plait/sdk/error.hpp"
#include "util/human_bytes.hpp"

namespace plait::compare {
std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

namespace {

std::string sci(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2e", v);
  return buf;
}

std::string origin_text(const Setting& s) { return s.origin.empty() ? s.value : s.value + " (" + s.origin + ")"; }

Section config_section(const Comparison& c) {
  Section s{"Configuration", {}, {}};
  if (c.differences.empty()) {
    s.sentences.push_back(concat("The resolved configs are the same (", c.same_settings, " settings)."));
  } else {
    s.sentences.push_back(concat(c.differences.size(), " setting", c.differences.size() == 1 ? "" : "s", " differ; ",
                                 c.same_settings, " are the same."));
    Table t;
    t.header.push_back("setting");
    for (const auto& r : c.runs) t.header.push_back(r.name);
    for (const auto& d : c.differences) {
      std::vector<std::string> row{d.key};
      for (const auto& v : d.per_run) row.push_back(origin_text(v));
      t.rows.push_back(std::move(row));
    }
    s.tables.push_back(std::move(t));
  }
  for (const auto& b : c.bundle_changes) s.sentences.push_back(b + ".");
  for (const auto& w : c.warnings) s.sentences.push_back("Note: " + w + ".");
  return s;
}

Section loss_section(const Comparison& c) {
  Section s{"Loss agreement", {loss_verdict(c)}, {}, Chart::losses};
  if (c.loss.steps.empty()) return s;
  Table t{{"step"}, {}};
  for (const auto& r : c.runs) t.header.push_back(r.name);
  t.header.push_back("largest relative difference");
  std::map<int64_t, std::vector<double>> by_step;
  for (const auto& f : c.figures) {
    for (const auto& [step, loss] : f.losses) by_step[step].push_back(loss);
  }
  // The first steps, the first divergent one, and the last: enough to see the agreement.
  std::vector<std::size_t> shown;
  const std::size_t n = c.loss.steps.size();
  for (std::size_t i = 0; i < n; ++i) {
    const bool divergent = c.loss.first_divergent && c.loss.steps[i] == *c.loss.first_divergent;
    if (i < 3 || i + 2 >= n || divergent) shown.push_back(i);
  }
  for (std::size_t i : shown) {
    const int64_t step = c.loss.steps[i];
    std::vector<std::string> row{std::to_string(step)};
    for (double l : by_step[step]) row.push_back(fixed(l, 6));
    row.push_back(sci(c.loss.worst_relative[i]));
    t.rows.push_back(std::move(row));
  }
  s.tables.push_back(std::move(t));
  return s;
}

Section speed_section(const Comparison& c) {
  Section s{"Speed", {}, {}};
  s.sentences.push_back(concat("Medians over the steps after warm-up (the first ",
                               c.warmup_steps == 1 ? std::string("recorded step") : concat(c.warmup_steps, " recorded steps"),
                               " left out), spread as the interquartile range; a run is called faster "
                               "or slower than ", c.runs.front().name, " only by ",
                               speed_rule(c.figures.back().speed, c.figures.front().speed), "."));
  Table t{{"run", "tokens/s", "step ms", "IQR ms", "vs first", "verdict", "MFU", "steps"}, {}};
  const bool repeated = std::any_of(c.figures.begin(), c.figures.end(),
                                    [](const RunFigures& f) { return f.speed.repeat_step_ms.size() > 1; });
  if (repeated) t.header.push_back("step ms per repeat");
  for (std::size_t k = 0; k < c.runs.size(); ++k) {
    const RunSpeed& sp = c.figures[k].speed;
    t.rows.push_back({c.runs[k].name, fixed(sp.tokens_per_s.median, 0), fixed(sp.step_ms.median, 2),
                      fixed(sp.step_ms.q1, 2) + "-" + fixed(sp.step_ms.q3, 2), fixed(sp.ratio, 3) + "x",
                      k == 0 ? "(baseline)" : sp.verdict, fixed(100.0 * sp.mfu, 2) + "%", std::to_string(sp.steps_used)});
    if (repeated) {
      std::string each;
      for (double ms : sp.repeat_step_ms) each += (each.empty() ? "" : " / ") + fixed(ms, 2);
      t.rows.back().push_back(each);
    }
  }
  s.tables.push_back(std::move(t));
  for (std::size_t k = 1; k < c.runs.size(); ++k) {
    const RunSpeed& sp = c.figures[k].speed;
    if (sp.verdict == "within noise") {
      s.sentences.push_back(concat(c.runs[k].name, " and ", c.runs.front().name, ": the difference (", fixed(sp.ratio, 3),
                                   "x tokens/s) is within the noise of the step times; it is not a measured difference."));
    } else if (sp.verdict == kTooFewSteps) {
      s.sentences.push_back(concat(c.runs[k].name, " and ", c.runs.front().name, ": ",
                                   std::min(sp.step_ms.n, c.figures.front().speed.step_ms.n),
                                   " step(s) measured after warm-up, and ", kFewestStepsToJudge,
                                   " are needed to call either faster; the ", fixed(sp.ratio, 3),
                                   "x is not a measured difference (train more steps, or plait sweep --repeats 3)."));
    }
  }
  return s;
}

// The runs by median tokens/s, each against the fastest, with the same noise rule.
Section ranking_section(const Comparison& c) {
  std::vector<std::size_t> order(c.runs.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return c.figures[a].speed.tokens_per_s.median > c.figures[b].speed.tokens_per_s.median;
  });
  const RunSpeed& best = c.figures[order.front()].speed;
  Section s{"Ranking", {"By median tokens/s, each against the fastest by the same rule."}, {}};
  Table t{{"place", "run", "tokens/s", "vs fastest", "step ms (IQR)", "against the fastest", "peak memory (max rank)"}, {}};
  for (std::size_t place = 0; place < order.size(); ++place) {
    const std::size_t k = order[place];
    const RunSpeed& sp = c.figures[k].speed;
    int64_t peak = 0;
    for (const auto& m : c.figures[k].memory) peak = std::max(peak, m.peak);
    const std::string against = place == 0                       ? "fastest"
                                 : !speed_judgeable(sp, best)     ? kTooFewSteps
                                 : speed_difference(sp, best) > 0 ? "slower"
                                                                  : "within noise";
    t.rows.push_back({std::to_string(place + 1), c.runs[k].name, fixed(sp.tokens_per_s.median, 0),
                      fixed(sp.tokens_per_s.median / best.tokens_per_s.median, 3) + "x",
                      fixed(sp.step_ms.median, 2) + " (" + fixed(sp.step_ms.q1, 2) + "-" + fixed(sp.step_ms.q3, 2) + ")",
                      against, human_bytes(peak)});
  }
  s.tables.push_back(std::move(t));
  return s;
}

Section breakdown_section(const Comparison& c) {
  Section s{"Where the time goes", {"Median ms per step of each phase (time.<phase>_ms), the mean over ranks; ranks "
                                    "listed where they differ by over 10% of the step."}, {}, Chart::step_time};
  std::vector<std::string> phases;
  for (const auto& f : c.figures) {
    for (const auto& [p, ms] : f.breakdown.mean.phases) {
      if (std::find(phases.begin(), phases.end(), p) == phases.end()) phases.push_back(p);
    }
  }
  if (phases.empty()) {
    s.sentences = {"The runs recorded no step-time breakdown ([train] phase_timing = false)."};
    return s;
  }
  Table t{{"run"}, {}};
  for (const auto& p : phases) t.header.push_back(p);
  t.header.push_back("step");
  auto row_of = [&](const std::string& name, const RankBreakdown& b) {
    std::vector<std::string> row{name};
    for (const auto& p : phases) {
      const auto it = std::find_if(b.phases.begin(), b.phases.end(), [&](const auto& x) { return x.first == p; });
      row.push_back(it == b.phases.end() ? "-" : fixed(it->second, 2));
    }
    row.push_back(fixed(b.step_ms, 2));
    return row;
  };
  for (std::size_t k = 0; k < c.runs.size(); ++k) {
    const RunBreakdown& b = c.figures[k].breakdown;
    t.rows.push_back(row_of(c.runs[k].name, b.mean));
    if (b.ranks_differ) {
      for (const auto& r : b.ranks) t.rows.push_back(row_of("  " + r.who, r));
    }
  }
  s.tables.push_back(std::move(t));
  return s;
}

Section memory_section(const Comparison& c) {
  Section s{"Memory per rank", {"At the last recorded step: peak during the step, and what the rank holds."}, {},
            Chart::memory};
  Table t{{"run", "rank", "peak", "params", "grads", "optimizer", "activations", "host"}, {}};
  for (std::size_t k = 0; k < c.runs.size(); ++k) {
    for (const auto& m : c.figures[k].memory) {
      t.rows.push_back({c.runs[k].name, m.who, human_bytes(m.peak), human_bytes(m.params), human_bytes(m.grads),
                        human_bytes(m.optimizer), human_bytes(m.activations), human_bytes(m.host)});
    }
  }
  s.tables.push_back(std::move(t));
  return s;
}

Section comm_section(const Comparison& c) {
  Section s{"Communication per step (rank 0)", {"Bus bytes as nccl-tests counts them, the operations' time, and the "
                                               "time rank 0 was blocked waiting for them."}, {},
            Chart::communication};
  Table t{{"run", "axis.op", "bytes", "ms", "exposed ms"}, {}};
  for (std::size_t k = 0; k < c.runs.size(); ++k) {
    for (const auto& op : c.figures[k].comm) {
      t.rows.push_back({c.runs[k].name, op.key, human_bytes(static_cast<int64_t>(op.bytes_per_step)),
                        fixed(op.ms_per_step, 2), fixed(op.exposed_ms_per_step, 2)});
    }
  }
  if (t.rows.empty()) s.sentences.push_back("No run communicated (one process each).");
  s.tables.push_back(std::move(t));
  return s;
}

std::vector<std::size_t> column_widths(const Table& t) {
  std::vector<std::size_t> w(t.header.size(), 0);
  auto fit = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size() && i < w.size(); ++i) w[i] = std::max(w[i], row[i].size());
  };
  fit(t.header);
  for (const auto& r : t.rows) fit(r);
  return w;
}

}  // namespace

std::string loss_verdict(const Comparison& c) {
  const LossAgreement& a = c.loss;
  if (a.steps.empty()) return "The runs have no recorded step in common: their losses cannot be compared.";
  const double worst = *std::max_element(a.worst_relative.begin(), a.worst_relative.end());
  const std::string over = concat(a.steps.size(), " common steps");
  if (!a.tolerance) {
    return concat("Largest relative loss difference ", sci(worst), " over ", over, "; ", a.tolerance_basis,
                  ", so equivalence is not judged.");
  }
  if (!a.first_divergent) {
    return concat("Equivalent: every loss agrees within ", sci(*a.tolerance), " (", a.tolerance_basis, ") over ", over,
                  "; largest relative difference ", sci(worst), ".");
  }
  std::string keys;
  for (const auto& d : c.differences) keys += (keys.empty() ? "" : ", ") + d.key;
  const auto at = std::find(a.steps.begin(), a.steps.end(), *a.first_divergent) - a.steps.begin();
  return concat("Not equivalent: the losses diverge at step ", *a.first_divergent, " (relative difference ",
                sci(a.worst_relative[static_cast<std::size_t>(at)]), " > ", sci(*a.tolerance), ", ", a.tolerance_basis,
                "); largest ", sci(worst), " over ", over, ".",
                keys.empty() ? std::string(" The configs do not differ.") : concat(" What differs: ", keys, "."));
}

std::vector<Section> report_sections(const Comparison& c) {
  return {config_section(c),    loss_section(c),   speed_section(c), ranking_section(c),
          breakdown_section(c), memory_section(c), comm_section(c)};
}

std::string render_terminal(const std::vector<Section>& sections) {
  std::ostringstream out;
  for (const auto& s : sections) {
    out << s.title << "\n" << std::string(s.title.size(), '-') << "\n";
    for (const auto& line : s.sentences) out << line << "\n";
    for (const auto& t : s.tables) {
      if (t.rows.empty()) continue;
      const auto w = column_widths(t);
      auto line = [&](const std::vector<std::string>& row) {
        std::string text;
        for (std::size_t i = 0; i < w.size(); ++i) {
          const std::string cell = i < row.size() ? row[i] : "";
          text += (i ? "  " : "") + cell + std::string(w[i] - cell.size(), ' ');
        }
        out << text.substr(0, text.find_last_not_of(' ') + 1) << "\n";
      };
      line(t.header);
      for (const auto& r : t.rows) line(r);
    }
    out << "\n";
  }
  return out.str();
}

std::string render_markdown(const std::vector<Section>& sections) {
  std::ostringstream out;
  out << kMarkdownBegins << "\n";
  auto escape = [](std::string cell) {
    for (std::size_t p = 0; (p = cell.find('|', p)) != std::string::npos; p += 2) cell.replace(p, 1, "\\|");
    return cell;
  };
  for (const auto& s : sections) {
    out << "## " << s.title << "\n\n";
    for (const auto& line : s.sentences) out << line << "\n\n";
    for (const auto& t : s.tables) {
      if (t.rows.empty()) continue;
      out << "|";
      for (const auto& h : t.header) out << " " << escape(h) << " |";
      out << "\n|";
      for (std::size_t i = 0; i < t.header.size(); ++i) out << (i == 0 ? "---|" : "---:|");
      out << "\n";
      for (const auto& r : t.rows) {
        out << "|";
        for (const auto& cell : r) out << " " << escape(cell) << " |";
        out << "\n";
      }
      out << "\n";
    }
  }
  return out.str();
}

}  // namespace plait::compare
