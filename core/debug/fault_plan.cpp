#include "debug/fault_plan.hpp"

#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include "config/resolve.hpp"
#include "plait/sdk/error.hpp"
#include "util/did_you_mean.hpp"

namespace plait {
namespace {

const std::map<std::string, FaultKind>& kinds() {
  static const std::map<std::string, FaultKind> k = {
      {"kill", FaultKind::kill},   {"segv", FaultKind::segv},         {"exit", FaultKind::exit},
      {"hang", FaultKind::hang},   {"slow", FaultKind::slow},         {"mismatch", FaultKind::mismatch},
      {"abort", FaultKind::abort}, {"corrupt", FaultKind::corrupt},   {"nonfinite", FaultKind::nonfinite}};
  return k;
}

int64_t whole_number(const std::string& text, const std::string& key, const std::string& bad) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  PLAIT_CHECK(!text.empty() && *end == '\0' && v >= 0, concat(bad, key, "=", text, " is not a whole number"),
              concat("write ", key, "=<number>"));
  return v;
}

const char* kFaultForm = "write \"<kind> rank=R step=S\" or \"<kind> rank=R op=GROUP#N\" (slow: ms=M too)";

// One key=value of a fault into `f`; `bad` starts its errors.
void read_fault_key(FaultSpec& f, const std::string& key, const std::string& value, const std::string& bad) {
  if (key == "rank") {
    f.rank = static_cast<int>(whole_number(value, key, bad));
  } else if (key == "step") {
    f.step = whole_number(value, key, bad);
    PLAIT_CHECK(f.step >= 1, concat(bad, "step=0 is not a step (steps count from 1)"), kFaultForm);
  } else if (key == "op") {
    const auto hash = value.find('#');
    PLAIT_CHECK(hash != std::string::npos && hash > 0, concat(bad, "op=", value, " does not name GROUP#N"),
                "write op=dp.0#12: the 12th collective on group dp.0 (plait debug and flight/rank-<r>.json number them)");
    f.group = value.substr(0, hash);
    f.op = static_cast<uint64_t>(whole_number(value.substr(hash + 1), "op's number", bad));
    PLAIT_CHECK(f.op >= 1, concat(bad, "op numbers count from 1"), kFaultForm);
  } else if (key == "attempt") {
    f.attempt = static_cast<int>(whole_number(value, key, bad));
  } else if (key == "ms") {
    char* end = nullptr;
    f.ms = std::strtod(value.c_str(), &end);
    PLAIT_CHECK(!value.empty() && *end == '\0' && f.ms > 0, concat(bad, "ms=", value, " is not a positive number"), kFaultForm);
    // An hour a step is already a hang: past it the sleep's clock arithmetic overflows.
    PLAIT_CHECK(f.ms <= 3.6e6, concat(bad, "ms=", value, " is more than an hour a step"),
                "a slow fault adds up to 3600000 ms to each step; a rank that stops is a hang fault");
  } else {
    throw Error(concat(bad, "'", key, "' is not a fault's key", did_you_mean(key, {"rank", "step", "op", "ms", "attempt"})),
                kFaultForm);
  }
}

// What each kind takes: a rank (but corrupt), a step or an op, ms for slow only.
void check_fault_form(FaultSpec& f, bool has_rank, const std::string& bad) {
  PLAIT_CHECK(has_rank || f.kind == FaultKind::corrupt, concat(bad, "it names no rank"), kFaultForm);
  if (f.kind == FaultKind::slow) {
    PLAIT_CHECK(f.ms > 0, concat(bad, "a slow fault needs ms=M, the milliseconds to add to each step"), kFaultForm);
    PLAIT_CHECK(f.op == 0, concat(bad, "a slow fault is per step: it takes step=S, not op="), kFaultForm);
    if (f.step == 0) f.step = 1;
  } else {
    PLAIT_CHECK(f.ms == 0, concat(bad, "ms= belongs to slow faults only"), kFaultForm);
    PLAIT_CHECK((f.step > 0) != (f.op > 0),
                concat(bad, f.step > 0 ? "it names both a step and an op" : "it names neither a step nor an op"), kFaultForm);
  }
  PLAIT_CHECK(f.kind != FaultKind::mismatch || f.op > 0, concat(bad, "a mismatch is of one collective: it takes op=GROUP#N"),
              "write op=dp.0#12");
  PLAIT_CHECK(f.kind != FaultKind::nonfinite || f.step > 0,
              concat(bad, "nonfinite spoils the loss of a step: it takes step=S"), "write nonfinite rank=0 step=3");
  PLAIT_CHECK(f.kind != FaultKind::corrupt || f.step > 0,
              concat(bad, "corrupt spoils the checkpoint of a step: it takes step=S"), "write corrupt rank=0 step=4");
}

FaultSpec parse_one(const std::string& text, const std::string& place) {
  const std::string bad = concat(place, ": fault '", text, "': ");
  std::istringstream words(text);
  std::string kind;
  words >> kind;
  std::vector<std::string> names;
  for (const auto& [name, k] : kinds()) names.push_back(name);
  const auto it = kinds().find(kind);
  PLAIT_CHECK(it != kinds().end(), concat(bad, "'", kind, "' is not a fault", did_you_mean(kind, names)),
              concat("the kinds are kill, segv, exit, hang, slow, mismatch, abort, corrupt and nonfinite; ", kFaultForm));
  FaultSpec f;
  f.kind = it->second;
  f.text = text;
  f.place = place;
  std::set<std::string> keys;
  for (std::string word; words >> word;) {
    const auto eq = word.find('=');
    PLAIT_CHECK(eq != std::string::npos, concat(bad, "'", word, "' is not key=value"), kFaultForm);
    const std::string key = word.substr(0, eq);
    PLAIT_CHECK(keys.insert(key).second, concat(bad, key, "= is given twice: which one is meant?"), concat("give ", key, "= once"));
    read_fault_key(f, key, word.substr(eq + 1), bad);
  }
  check_fault_form(f, keys.count("rank") != 0, bad);
  return f;
}

}  // namespace

std::vector<FaultSpec> parse_faults(const std::vector<std::string>& specs, const std::string& place) {
  std::vector<FaultSpec> out;
  for (const auto& s : specs) out.push_back(parse_one(s, place));
  return out;
}

namespace {

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
}

// A group the rank is in, or a plugin's subgroup under one.
bool in_group(const std::vector<std::string>& groups, const std::string& group) {
  for (const auto& g : groups) {
    if (group == g || group.rfind(g + ".", 0) == 0) return true;
  }
  return false;
}

void check_reach(const FaultSpec& f, const FaultReach& reach) {
  const std::string fault = concat(f.place, ": fault '", f.text, "'");
  PLAIT_CHECK(f.rank < reach.world_size,
              concat(fault, " is on rank ", f.rank, ", which this job does not have (", reach.world_size, " ranks)"),
              concat("choose a rank from 0 to ", reach.world_size - 1));
  PLAIT_CHECK(f.step <= reach.steps,
              concat(fault, " is at step ", f.step, ", past the run's last step (", reach.steps, "): it would never happen"),
              concat("choose a step from 1 to ", reach.steps));
  PLAIT_CHECK(f.attempt <= reach.max_restarts,
              concat(fault, " strikes in attempt ", f.attempt, ", but the job restarts at most ", reach.max_restarts,
                     " time(s): it would never happen"),
              "raise [distributed] max_restarts (--max-restarts), or leave attempt= out for the first start");
  if (f.op > 0 && reach.groups_of) {
    const std::vector<std::string> groups = reach.groups_of(f.rank);
    PLAIT_CHECK(in_group(groups, f.group),
                concat(fault, " is on group ", f.group, ", which rank ", f.rank,
                       groups.empty() ? std::string(" never issues a collective on: this job has no groups (one rank)")
                                      : concat(" is not in: it would never happen (rank ", f.rank, "'s groups: ",
                                               joined(groups), ")")),
                groups.empty() ? std::string("a fault on a collective needs a job of several ranks; use step=S")
                               : concat("name one of rank ", f.rank, "'s groups: ", joined(groups)));
  }
  if ((f.kind == FaultKind::abort || f.kind == FaultKind::mismatch) && reach.groups_of) {
    PLAIT_CHECK(!reach.groups_of(f.rank).empty(),
                concat(fault, " breaks a collective, but rank ", f.rank,
                       " issues none (this job has one rank): it would never happen"),
                "use kill, exit, segv or hang on a job of one rank");
  }
  if (f.kind == FaultKind::corrupt && reach.saves_at) {
    PLAIT_CHECK(reach.saves_at(f.step),
                concat(fault, " spoils the checkpoint of step ", f.step, ", but this run saves none at step ", f.step,
                       ": it would never happen"),
                "corrupt a step that [checkpoint] every (or final, at the last step) saves");
  }
}

}  // namespace

namespace {

// Ends the attempt it strikes in: the job restarts (into the next attempt) or stops.
bool ends_attempt(FaultKind kind) {
  return kind == FaultKind::kill || kind == FaultKind::segv || kind == FaultKind::exit || kind == FaultKind::hang ||
         kind == FaultKind::abort;
}

bool same_trigger(const FaultSpec& a, const FaultSpec& b) {
  return a.kind == b.kind && a.rank == b.rank && a.step == b.step && a.group == b.group && a.op == b.op &&
         a.attempt == b.attempt;
}

// A fault listed twice strikes once; a fault at a later step of an attempt that an earlier
// fault ends is never reached (the restart is the next attempt).
void check_together(const std::vector<FaultSpec>& faults) {
  for (std::size_t i = 0; i < faults.size(); ++i) {
    for (std::size_t j = 0; j < faults.size(); ++j) {
      const FaultSpec& a = faults[i];
      const FaultSpec& b = faults[j];
      if (i < j && same_trigger(a, b)) {
        throw Error(concat(b.place, ": fault '", b.text, "' is listed twice (as '", a.text,
                           "'): the second would never happen"),
                    "list each fault once; attempt=A repeats one in a later restart");
      }
      const bool ended_before = i != j && a.op == 0 && b.op == 0 && ends_attempt(a.kind) && a.attempt == b.attempt &&
                                a.step < b.step;
      PLAIT_CHECK(!ended_before,
                  concat(b.place, ": fault '", b.text, "' is at step ", b.step, " of attempt ", b.attempt, ", but '",
                         a.text, "' ends that attempt at step ", a.step, ": it would never happen"),
                  concat("give it attempt=", a.attempt + 1, " (the restart after '", a.text, "'), or an earlier step"));
    }
  }
}

}  // namespace

void check_faults(const std::vector<FaultSpec>& faults, const FaultReach& reach) {
  for (const auto& f : faults) check_reach(f, reach);
  check_together(faults);
}

bool struck(const FaultSpec& fault, const std::string& text, int rank, int attempt) {
  return text == fault.text && rank == fault.rank && attempt == fault.attempt;
}

namespace {

// The faults the older [debug] keys stand for, placed where the user set them.
std::vector<FaultSpec> faults_of_older_keys(const ResolvedConfig& config) {
  const DebugSettings& debug = config.debug();
  const Options& table = config.table("debug");
  const auto place = [&](const char* rank_key, const char* main_key) {
    return table.where(table.is_default(rank_key) ? main_key : rank_key);
  };
  std::vector<FaultSpec> out;
  if (debug.nonfinite_step > 0) {
    out.push_back(parse_one(concat("nonfinite rank=", debug.nonfinite_rank, " step=", debug.nonfinite_step),
                            place("nonfinite_rank", "nonfinite_step")));
  }
  if (debug.slow_ms > 0) {
    out.push_back(parse_one(concat("slow rank=", debug.slow_rank, " ms=", debug.slow_ms), place("slow_rank", "slow_ms")));
  }
  return out;
}

}  // namespace

std::vector<std::string> older_fault_key_notes(const ResolvedConfig& config) {
  std::vector<std::string> notes;
  for (const FaultSpec& f : faults_of_older_keys(config)) {
    const char* key = f.kind == FaultKind::slow ? "slow_ms" : "nonfinite_step";
    notes.push_back(concat(config.table("debug").where(key), ": [debug] ", key, " is the fault \"", f.text,
                           "\": write it in [debug] faults"));
  }
  return notes;
}

std::vector<FaultSpec> configured_faults(const ResolvedConfig& config) {
  std::vector<FaultSpec> out = parse_faults(config.debug().faults, config.table("debug").where("faults"));
  for (auto& f : faults_of_older_keys(config)) out.push_back(std::move(f));
  if (const char* env = std::getenv("PLAIT_FAULTS"); env != nullptr && *env != '\0') {
    std::vector<std::string> specs;
    std::istringstream in(env);
    for (std::string one; std::getline(in, one, ';');) {
      if (one.find_first_not_of(' ') != std::string::npos) specs.push_back(one);
    }
    for (auto& f : parse_faults(specs, "PLAIT_FAULTS")) out.push_back(std::move(f));
  }
  return out;
}

}  // namespace plait
