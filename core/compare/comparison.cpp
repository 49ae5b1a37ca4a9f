#include "compare/comparison.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "equivalence/tolerance.hpp"
#include "plait/sdk/error.hpp"
#include "timing/phase_clock.hpp"

namespace plait::compare {
namespace {

using Json = nlohmann::json;

double number_or(const Json& j, const std::string& key, double fallback = 0.0) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

double median_of(std::vector<double> v) { return v.empty() ? 0.0 : spread_of(std::move(v)).median; }

// Names that tell runs apart: a folder name used twice gets its parent's in front.
void name_runs(std::vector<RunRecord>& runs) {
  std::map<std::string, int> seen;
  for (const auto& r : runs) ++seen[r.name];
  for (auto& r : runs) {
    if (seen[r.name] > 1) {
      r.name = std::filesystem::path(r.dir).lexically_normal().parent_path().filename().string() + "/" + r.name;
    }
  }
}

std::string table_of(const std::string& key) { return key.substr(0, key.find('.')); }

// A plugin's table that only some runs have (the chosen plugin's settings) is one row:
// its settings in those runs, "(absent)" in the others.
ConfigDifference table_row(const std::string& table, const std::vector<RunRecord>& runs) {
  ConfigDifference d{"[" + table + "]", {}};
  for (const auto& r : runs) {
    std::string text, origins;
    for (auto it = r.settings.lower_bound(table + "."); it != r.settings.end() && table_of(it->first) == table; ++it) {
      text += concat(text.empty() ? "" : ", ", it->first.substr(table.size() + 1), " = ", it->second.value);
      if (it->second.origin != "default" && !it->second.origin.empty()) {
        origins += concat(origins.empty() ? "" : "; ", it->first.substr(table.size() + 1), ": ", it->second.origin);
      }
    }
    d.per_run.push_back(text.empty() ? Setting{"(absent)", ""} : Setting{text, origins});
  }
  return d;
}

void diff_configs(Comparison& c) {
  std::set<std::string> keys, partial_tables;
  for (const auto& r : c.runs) {
    for (const auto& [k, v] : r.settings) keys.insert(k);
  }
  for (const auto& key : keys) {
    for (const auto& r : c.runs) {
      const auto it = r.settings.lower_bound(table_of(key) + ".");
      if (it == r.settings.end() || table_of(it->first) != table_of(key)) partial_tables.insert(table_of(key));
    }
  }
  for (const auto& table : partial_tables) c.differences.push_back(table_row(table, c.runs));
  for (const auto& key : keys) {
    if (partial_tables.count(table_of(key))) continue;
    ConfigDifference d{key, {}};
    bool differs = false;
    for (const auto& r : c.runs) {
      const auto it = r.settings.find(key);
      d.per_run.push_back(it == r.settings.end() ? Setting{"(absent)", ""} : it->second);
      differs = differs || d.per_run.back().value != d.per_run.front().value;
    }
    if (differs) {
      c.differences.push_back(std::move(d));
    } else {
      ++c.same_settings;
    }
  }
}

// A bundle read by several runs (by file name) whose content differs between them.
void diff_bundles(Comparison& c) {
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> by_name;  // name -> (run, xxh3)
  for (const auto& r : c.runs) {
    for (const auto& b : r.bundles) by_name[std::filesystem::path(b.path).stem().string()].push_back({r.name, b.xxh3});
  }
  for (const auto& [name, reads] : by_name) {
    std::set<std::string> sums;
    for (const auto& [run, sum] : reads) sums.insert(sum);
    if (sums.size() < 2) continue;
    std::string detail;
    for (const auto& [run, sum] : reads) detail += concat(detail.empty() ? "" : ", ", run, " read xxh3 ", sum);
    c.bundle_changes.push_back(concat("bundle ", name, " changed between the runs: ", detail));
  }
}

std::string setting_of(const RunRecord& r, const std::string& key) {
  const auto it = r.settings.find(key);
  return it == r.settings.end() ? "" : it->second.value;
}

void agree_losses(Comparison& c) {
  LossAgreement& a = c.loss;
  std::set<std::string> dtypes;
  for (const auto& r : c.runs) dtypes.insert(setting_of(r, "train.dtype"));
  if (dtypes.size() > 1) {
    a.tolerance_basis = "the runs train in different dtypes: no common tolerance";
  } else {
    std::string dtype = *dtypes.begin();  // as TOML: "float32", quoted
    if (dtype.size() >= 2 && dtype.front() == '"') dtype = dtype.substr(1, dtype.size() - 2);
    a.tolerance = default_tolerance(dtype);
    a.tolerance_basis = a.tolerance ? concat(dtype, " (plait check's default)")
                                    : concat("plait check has no default tolerance for \"", dtype, "\"");
  }
  std::vector<std::map<int64_t, double>> losses;
  for (const auto& r : c.runs) {
    std::map<int64_t, double> by_step;
    for (const auto& m : r.metrics) {
      if (m.contains("loss") && m.at("loss").is_number()) by_step[m.at("step").get<int64_t>()] = m.at("loss").get<double>();
    }
    losses.push_back(std::move(by_step));
  }
  for (const auto& [step, first] : losses.front()) {
    double worst = 0.0;
    bool everywhere = true;
    for (std::size_t k = 1; k < losses.size(); ++k) {
      const auto it = losses[k].find(step);
      if (it == losses[k].end()) {
        everywhere = false;
        break;
      }
      worst = std::max(worst, relative_difference(it->second, first));
    }
    if (!everywhere) continue;
    a.steps.push_back(step);
    a.worst_relative.push_back(worst);
    if (a.tolerance && worst > *a.tolerance && !a.first_divergent) a.first_divergent = step;
  }
}

// The records after warm-up, of the run and of each repeat: the first record and the
// first tenth of each are left out.
std::vector<const Json*> steady_records(const RunRecord& r, int64_t& left_out, std::vector<double>* repeat_medians) {
  std::vector<const Json*> out;
  auto add = [&](const std::vector<Json>& records) {
    const std::size_t n = records.size();
    const std::size_t skip = n <= 1 ? 0 : std::min(n - 1, std::max<std::size_t>(1, n / 10));
    left_out = static_cast<int64_t>(skip);
    std::vector<double> step_ms;
    for (std::size_t i = skip; i < n; ++i) {
      out.push_back(&records[i]);
      step_ms.push_back(number_or(records[i], "step_ms"));
    }
    repeat_medians->push_back(median_of(step_ms));
  };
  add(r.metrics);
  for (const auto& more : r.repeats) add(more);
  return out;
}

// Repeats train the same model on the same data: their losses must be the first's.
void check_repeats(Comparison& c) {
  for (const auto& r : c.runs) {
    for (std::size_t k = 0; k < r.repeats.size(); ++k) {
      double worst = 0.0;
      for (std::size_t i = 0; i < std::min(r.metrics.size(), r.repeats[k].size()); ++i) {
        const Json& a = r.metrics[i].at("loss");
        const Json& b = r.repeats[k][i].at("loss");
        if (a.is_number() && b.is_number()) worst = std::max(worst, std::fabs(a.get<double>() - b.get<double>()));
      }
      if (worst > 0.0) {
        c.warnings.push_back(concat(r.name, ": repeat ", k + 2, "'s losses differ from repeat 1's (by up to ",
                                    worst, "): the run is not deterministic"));
      }
    }
  }
}

RunSpeed speed_of(const std::vector<const Json*>& records) {
  std::vector<double> step_ms, tps, mfu;
  for (const Json* m : records) {
    step_ms.push_back(number_or(*m, "step_ms"));
    tps.push_back(number_or(*m, "tokens_per_s"));
    mfu.push_back(number_or(*m, "mfu"));
  }
  RunSpeed s;
  s.step_ms = spread_of(step_ms);
  s.tokens_per_s = spread_of(tps);
  s.mfu = median_of(mfu);
  s.steps_used = static_cast<int64_t>(records.size());
  return s;
}

void judge_speed(std::vector<RunFigures>& figures) {
  const RunSpeed& first = figures.front().speed;
  for (std::size_t k = 1; k < figures.size(); ++k) {
    RunSpeed& s = figures[k].speed;
    s.ratio = first.tokens_per_s.median > 0 ? s.tokens_per_s.median / first.tokens_per_s.median : 0.0;
    const int side = speed_difference(s, first);
    s.verdict = !speed_judgeable(s, first) ? kTooFewSteps : side < 0 ? "faster" : side > 0 ? "slower" : "within noise";
  }
}

bool paired(const RunSpeed& a, const RunSpeed& b) {
  return a.repeat_step_ms.size() >= 2 && a.repeat_step_ms.size() == b.repeat_step_ms.size();
}

// Student's t at 97.5% for `df` degrees of freedom (two-sided 95%).
double t_critical(std::size_t df) {
  static const double table[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                 2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086};
  return df == 0 ? 1e300 : df <= 20 ? table[df - 1] : 1.96;
}

bool is_phase_key(const std::string& key) {
  return key.rfind("time.", 0) == 0 && key.rfind("time.comm_exposed.", 0) != 0 && key.size() > 8 &&
         key.compare(key.size() - 3, 3, "_ms") == 0;
}

// Median over the steps of one rank's phases; `rank_of(record)` picks that rank's object.
RankBreakdown breakdown_of(const std::string& who, const std::vector<const Json*>& records,
                           const std::function<const Json&(const Json&)>& rank_of) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<double>> phases, comm;
  std::vector<double> step_ms;
  for (const Json* m : records) {
    const Json& r = rank_of(*m);
    if (r.is_null()) continue;
    for (const auto& [key, value] : r.items()) {
      if (!value.is_number()) continue;
      if (is_phase_key(key)) {
        if (!phases.count(key)) order.push_back(key);
        phases[key].push_back(value.get<double>());
      } else if (key.rfind("time.comm_exposed.", 0) == 0) {
        comm[key.substr(18, key.size() - 18 - 3)].push_back(value.get<double>());
      }
    }
    step_ms.push_back(number_or(r, "step_ms", number_or(*m, "step_ms")));
  }
  // In the clock's order of phases (forward, backward, comm_exposed, ...), not the record's.
  auto rank_of_phase = [](const std::string& key) {
    for (std::size_t p = 0; p < kPhaseCount; ++p) {
      if (key == concat("time.", phase_name(static_cast<Phase>(p)), "_ms")) return p;
    }
    return kPhaseCount;
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](const std::string& a, const std::string& b) { return rank_of_phase(a) < rank_of_phase(b); });
  RankBreakdown b{who, {}, {}, median_of(step_ms)};
  for (const auto& key : order) b.phases.emplace_back(key.substr(5, key.size() - 5 - 3), median_of(phases[key]));
  for (auto& [key, values] : comm) {
    values.resize(records.size(), 0.0);  // steps where the rank did not wait in it
    b.comm_ms.emplace_back(key, median_of(values));
  }
  return b;
}

const Json kNull;

RunBreakdown run_breakdown(const std::vector<const Json*>& records) {
  RunBreakdown out;
  const Json& last = *records.back();
  if (last.contains("ranks")) {
    for (std::size_t r = 0; r < last.at("ranks").size(); ++r) {
      out.ranks.push_back(breakdown_of(concat("rank ", r), records, [r](const Json& m) -> const Json& {
        return m.contains("ranks") && r < m.at("ranks").size() ? m.at("ranks")[r] : kNull;
      }));
    }
  } else {
    // Only a summary was kept: the ranks' median of each figure.
    std::vector<Json> medians;
    for (const Json* m : records) {
      Json one = Json::object();
      const Json summary = m->value("ranks_summary", Json::object());
      for (const auto& [key, s] : summary.items()) one[key] = s.at("median");
      medians.push_back(std::move(one));
    }
    std::vector<const Json*> pointers;
    for (const auto& m : medians) pointers.push_back(&m);
    out.ranks.push_back(breakdown_of("ranks (median)", pointers, [](const Json& m) -> const Json& { return m; }));
  }
  out.mean = out.ranks.front();
  out.mean.who = "mean of ranks";
  for (std::size_t p = 0; p < out.mean.phases.size(); ++p) {
    double sum = 0.0, lo = 1e300, hi = -1e300;
    for (const auto& r : out.ranks) {
      const double v = p < r.phases.size() ? r.phases[p].second : 0.0;
      sum += v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    out.mean.phases[p].second = sum / static_cast<double>(out.ranks.size());
    if (hi - lo > 0.1 * out.mean.step_ms) out.ranks_differ = true;
  }
  return out;
}

int64_t int_or(const Json& j, const char* key) { return static_cast<int64_t>(number_or(j, key)); }

RankMemory memory_of(const std::string& who, const Json& r) {
  return {who,
          int_or(r, "peak_mem_bytes"),
          int_or(r, "param_bytes"),
          int_or(r, "grad_bytes"),
          int_or(r, "optimizer_bytes"),
          int_or(r, "activation_bytes"),
          std::max(int_or(r, "peak_host_mem_bytes"),
                   int_or(r, "host_param_bytes") + int_or(r, "host_grad_bytes") + int_or(r, "host_optimizer_bytes"))};
}

std::vector<RankMemory> memory_per_rank(const Json& last) {
  std::vector<RankMemory> out;
  if (last.contains("ranks")) {
    for (const auto& r : last.at("ranks")) out.push_back(memory_of(concat("rank ", r.at("rank").get<int64_t>()), r));
    return out;
  }
  for (const char* which : {"min", "median", "max"}) {
    Json one = Json::object();
    const Json summary = last.value("ranks_summary", Json::object());
    for (const auto& [key, s] : summary.items()) one[key] = s.at(which);
    out.push_back(memory_of(concat("ranks (", which, ")"), one));
  }
  return out;
}

// Rank 0's traffic per step, over every record (each covers the steps since the one before).
std::vector<CommOp> comm_per_step(const RunRecord& r) {
  std::map<std::string, CommOp> ops;
  for (const auto& m : r.metrics) {
    const Json comm = m.value("comm", Json::object());
    for (const auto& [key, c] : comm.items()) {
      CommOp& op = ops[key];
      op.key = key;
      op.bytes_per_step += number_or(c, "bytes");
      op.ms_per_step += number_or(c, "ms");
      op.exposed_ms_per_step += number_or(c, "exposed_ms");
    }
  }
  const int64_t first = r.metrics.front().at("step").get<int64_t>();
  const int64_t last = r.metrics.back().at("step").get<int64_t>();
  // The first record covers its own step only when it is the run's first (else the steps since a resume).
  const double steps = static_cast<double>(last - first + 1);
  std::vector<CommOp> out;
  for (auto& [key, op] : ops) {
    op.bytes_per_step /= steps;
    op.ms_per_step /= steps;
    op.exposed_ms_per_step /= steps;
    out.push_back(op);
  }
  std::sort(out.begin(), out.end(), [](const CommOp& a, const CommOp& b) { return a.bytes_per_step > b.bytes_per_step; });
  return out;
}

void warn_about(Comparison& c) {
  for (const auto& r : c.runs) {
    if (!r.state.empty() && r.state != "finished") {
      c.warnings.push_back(concat(r.name, " did not finish (", r.state, r.reason.empty() ? "" : ": " + r.reason, ")"));
    }
    if (r.torn_last_line) {
      c.warnings.push_back(concat(r.name, ": the last line of its metrics.jsonl was cut short (the run stopped while "
                                  "writing it) and is left out"));
    }
  }
  for (const char* key : {"model.family", "model.size", "model.n_layer", "model.n_embd"}) {
    for (const auto& r : c.runs) {
      if (setting_of(r, key) != setting_of(c.runs.front(), key)) {
        c.warnings.push_back(concat("the runs train different models (", key, "): their losses and speeds are not "
                                    "the same model's"));
        return;
      }
    }
  }
}

}  // namespace

bool speed_judgeable(const RunSpeed& a, const RunSpeed& b) {
  return paired(a, b) || std::min(a.step_ms.n, b.step_ms.n) >= kFewestStepsToJudge;
}

int speed_difference(const RunSpeed& a, const RunSpeed& b) {
  if (!speed_judgeable(a, b)) return 0;
  if (!paired(a, b)) return a.step_ms.against(b.step_ms);
  std::vector<double> d;
  for (std::size_t i = 0; i < a.repeat_step_ms.size(); ++i) d.push_back(std::log(a.repeat_step_ms[i] / b.repeat_step_ms[i]));
  double mean = 0.0, var = 0.0;
  for (double x : d) mean += x / static_cast<double>(d.size());
  for (double x : d) var += (x - mean) * (x - mean) / static_cast<double>(d.size() - 1);
  const double se = std::sqrt(var / static_cast<double>(d.size()));
  if (std::fabs(mean) <= t_critical(d.size() - 1) * se) return 0;
  return mean < 0 ? -1 : 1;
}

std::string speed_rule(const RunSpeed& a, const RunSpeed& b) {
  if (paired(a, b)) {
    return concat("a paired t-test at 95% over the ", a.repeat_step_ms.size(),
                  " repeats' median step times (each repeat ran the runs side by side; what differs between repeats "
                  "is the noise)");
  }
  return "the notches of their step times (median -+ 1.58 IQR / sqrt(steps), an approximate 95% interval for the "
         "median) do not overlap; with one run each, drift of the machine between runs is not measured (plait sweep "
         "--repeats 3 measures it)";
}

Spread spread_of(std::vector<double> v) {
  PLAIT_CHECK(!v.empty(), "no values to take quartiles of", "");
  std::sort(v.begin(), v.end());
  auto at = [&](double q) {
    const double pos = q * static_cast<double>(v.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
  };
  return {at(0.5), at(0.25), at(0.75), static_cast<int64_t>(v.size())};
}

double Spread::notch() const { return n > 0 ? 1.58 * iqr() / std::sqrt(static_cast<double>(n)) : 0.0; }

int Spread::against(const Spread& other) const {
  if (median + notch() < other.median - other.notch()) return -1;
  if (median - notch() > other.median + other.notch()) return 1;
  return 0;
}

Comparison compare_runs(std::vector<RunRecord> runs) {
  PLAIT_CHECK(runs.size() >= 2, concat("compare needs two or more runs; got ", runs.size()),
              "pass two or more run folders, or a sweep folder");
  name_runs(runs);
  Comparison c;
  c.runs = std::move(runs);
  diff_configs(c);
  diff_bundles(c);
  agree_losses(c);
  warn_about(c);
  check_repeats(c);
  for (const auto& r : c.runs) {
    int64_t left_out = 0;
    RunFigures f;
    std::vector<double> repeat_medians;
    const std::vector<const Json*> steady = steady_records(r, left_out, &repeat_medians);
    c.warmup_steps = std::max(c.warmup_steps, left_out);
    f.speed = speed_of(steady);
    f.speed.repeat_step_ms = std::move(repeat_medians);
    f.breakdown = run_breakdown(steady);
    f.memory = memory_per_rank(r.metrics.back());
    f.comm = comm_per_step(r);
    for (const auto& m : r.metrics) {
      if (m.contains("loss") && m.at("loss").is_number()) f.losses.emplace_back(m.at("step").get<int64_t>(), m.at("loss").get<double>());
    }
    c.figures.push_back(std::move(f));
  }
  judge_speed(c.figures);
  return c;
}

}  // namespace plait::compare
