#include "verify/verify_run.hpp"

#include <chrono>
#include <cstdio>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "equivalence/equivalence.hpp"
#include "equivalence/tolerance.hpp"
#include "checkpoint/checkpoint_reader.hpp"
#include "metrics/metrics_records.hpp"
#include "plait/sdk/error.hpp"
#include "util/subprocess.hpp"
#include "util/human_bytes.hpp"
#include "util/read_text.hpp"
#include "verify/approximation.hpp"
#include "verify/honesty.hpp"

namespace plait::verify {
namespace fs = std::filesystem;

namespace {

using Sets = std::vector<std::string>;

// "1.2e-15": a relative difference, as the tables print it.
std::string sci(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1e", x);
  return text;
}

std::vector<std::string> argv_of(const std::string& verb, const Workspace& ws, const Sets& sets, const Sets& extra) {
  std::vector<std::string> argv = {ws.plait};
  if (verb == "config validate") {
    argv.insert(argv.end(), {"config", "validate"});
  } else {
    argv.push_back(verb);
  }
  argv.push_back(ws.base_config);
  for (const auto& s : sets) {
    argv.push_back("--set");
    argv.push_back(s);
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

// Why a run failed, in its words, or where to look.
std::string first_reason(const fs::path& log) {
  const std::string said = first_marked_line(log, {"error: ", "mismatch: "});
  return said.empty() ? concat("see ", log.string()) : said;
}

struct Ran {
  int code = 0;
  fs::path log;
};

Ran run(const std::string& verb, const Workspace& ws, const Sets& sets, const Sets& extra, const fs::path& log) {
  const int code = run_command(argv_of(verb, ws, sets, extra), log.string());
  if (const int sig = catch_stop_signals().load(); sig != 0) {
    throw StoppedAsAsked{sig, concat("its run logging to ", log.string())};
  }
  return {code, log};
}

// Whether a run succeeded; its reason when not.
bool ok(const Ran& r, Outcome& out, const std::string& what) {
  if (r.code == 0) return true;
  out.status = "fail";
  out.detail = concat(what, " exited with ", r.code, ": ", first_reason(r.log));
  return false;
}

void equivalence(const Case& c, const Workspace& ws, const fs::path& dir, Outcome& out) {
  Sets flags = {"--out", (dir / "check").string()};
  if (c.tolerance > 0) flags.insert(flags.end(), {"--tolerance", concat(c.tolerance)});
  const Ran r = run("check", ws, c.sets, flags, dir / "check.log");
  const fs::path report = dir / "check" / "equivalence.json";
  if (r.code != 0 || !fs::exists(report)) {
    ok(r.code == 0 ? Ran{1, r.log} : r, out, "plait check");
    return;
  }
  const auto j = nlohmann::json::parse(read_text(report));
  out.status = j.at("passed").get<bool>() ? "pass" : "fail";
  out.detail = concat("losses ", j.at("losses").size(), " steps, worst ", sci(j.at("worst_loss_relative").get<double>()),
                      "; gradients ", j.at("grads").size(), ", worst ", sci(j.at("worst_grad_relative").get<double>()),
                      " (tolerance ", j.at("tolerance").get<double>(), ")");
  if (out.status == "fail") out.detail += "; " + first_reason(r.log);
}

Sets with(Sets sets, const std::string& one_more) {
  sets.push_back(one_more);
  return sets;
}

// Whether the runs recorded `n` and `tail` steps (the losses compared); the reason when not.
bool recorded(const std::vector<double>& whole, std::size_t n, const std::vector<double>& rest, std::size_t tail, Outcome& out) {
  out.status = "fail";
  if (whole.size() == n && rest.size() == tail) return true;
  out.detail = concat("the runs recorded ", whole.size(), " and ", rest.size(), " steps, not ", n, " and ", tail);
  return false;
}

// The whole run saves halfway; a run resumed from that checkpoint must end as it did. (A
// run stopped halfway by --steps would train under another schedule: its length is steps.)
void resume(const Case& c, const Workspace& ws, const fs::path& dir, Outcome& out) {
  const int n = c.steps, half = n / 2;
  const Sets sets = with(with(c.sets, concat("train.steps=", n)), concat("checkpoint.every=", half));
  if (!ok(run("run", ws, sets, {"--out", (dir / "straight").string()}, dir / "straight.log"), out, "the whole run")) return;
  const Sets resumed = with(sets, concat("checkpoint.resume_from=", (dir / "straight/checkpoints").string(), "/step-", half));
  if (!ok(run("run", ws, resumed, {"--out", (dir / "resumed").string()}, dir / "resumed.log"), out, "the resumed run")) return;
  const auto whole = run_losses((dir / "straight").string()), tail = run_losses((dir / "resumed").string());
  if (!recorded(whole, n, tail, n - half, out)) return;
  for (int i = 0; i < n - half; ++i) {
    if (tail[i] != whole[half + i]) {
      out.detail = concat("the resumed losses differ: step ", half + i + 1, " ", tail[i], " against ", whole[half + i]);
      return;
    }
  }
  const std::string last = concat("checkpoints/step-", n);
  if (const std::string d = checkpoint::first_difference(dir / "straight" / last, dir / "resumed" / last); !d.empty()) {
    out.detail = concat("the final checkpoints differ: ", d);
  } else {
    out.status = "pass";
    out.detail = concat("losses of steps ", half + 1, "-", n, " and every tensor of the final checkpoint bit for bit");
  }
}

void reshard(const Case& c, const Workspace& ws, const fs::path& dir, Outcome& out) {
  const Sets source = with(c.sets, "checkpoint.every=2");
  if (!ok(run("run", ws, source, {"--out", (dir / "source").string()}, dir / "source.log"), out, "the saving run")) return;
  const Sets target = with(c.other, "checkpoint.resume_from=" + (dir / "source/checkpoints/step-2").string());
  if (!ok(run("run", ws, target, {"--out", (dir / "target").string()}, dir / "target.log"), out, "the resuming run")) return;
  const auto whole = run_losses((dir / "source").string()), tail = run_losses((dir / "target").string());
  if (!recorded(whole, 4, tail, 2, out)) return;
  // An approximate plugin trains another model on either side: the loss gap it may have.
  const double tolerance = c.approximate ? ws.loss_gap : *default_tolerance("float64");
  const double worst = std::max(relative_difference(tail[0], whole[2]), relative_difference(tail[1], whole[3]));
  out.status = worst <= tolerance ? "pass" : "fail";
  out.detail = concat("losses of steps 3-4 within ", sci(worst), " of the saving run's (tolerance ", tolerance, ")");
}

// Either side of a loss-gap case: a longer run, every step logged.
Sets loss_gap_sets(const Sets& sets) { return with(with(sets, concat("train.steps=", kLossGapSteps)), "train.log_every=1"); }

// An approximate plugin and ddp over the same batches (approximation.hpp).
void loss_gap(const Case& c, const Workspace& ws, const fs::path& dir, Outcome& out) {
  const Sets mine = loss_gap_sets(c.sets), theirs = loss_gap_sets(c.other);
  if (!ok(run("run", ws, mine, {"--out", (dir / "plugin").string()}, dir / "plugin.log"), out, "its run")) return;
  if (!ok(run("run", ws, theirs, {"--out", (dir / "ddp").string()}, dir / "ddp.log"), out, "ddp's run")) return;
  const Records a = read_metrics_records((dir / "plugin").string()), b = read_metrics_records((dir / "ddp").string());
  if (a.size() != kLossGapSteps || b.size() != kLossGapSteps) {
    out.detail = concat("the runs recorded ", a.size(), " and ", b.size(), " steps, not ", kLossGapSteps);
    return;
  }
  const GapVerdict verdict = loss_gap_verdict(a, b, ws.loss_gap);
  out.status = verdict.passed ? "pass" : "fail";
  out.detail = verdict.detail;
}

void refused(const Case& c, const Workspace& ws, const fs::path& dir, Outcome& out) {
  const Ran r = run("config validate", ws, c.sets, {}, dir / "validate.log");
  const std::string said = read_text(r.log);
  const bool named = said.find(c.expect) != std::string::npos;
  out.status = r.code != 0 && named ? "pass" : "fail";
  out.detail = r.code == 0 ? "plait config validate accepted it" : first_reason(r.log);
  if (r.code != 0 && !named) out.detail = concat("refused, but not as \"", c.expect, "...\": ", out.detail);
}

// Reads: 4 steps, logging only the last, with every wait for the device counted. State:
// 8 steps, each logged (a rank must hold what it reports in at least one). Traffic: 8
// steps, each logged (a plugin that sends every few steps, as local SGD does, sends).
Sets honesty_sets(const Case& c) {
  if (c.kind == CaseKind::host_reads) return with(with(c.sets, "debug.count_host_syncs=true"), "train.log_every=4");
  if (c.kind == CaseKind::traffic) {
    return with(with(with(c.sets, "debug.count_wire_bytes=true"), "train.log_every=1"), "train.steps=8");
  }
  return with(with(c.sets, "train.steps=8"), "train.log_every=1");
}

void honesty(const Case& c, const Workspace& ws, const fs::path& dir, Outcome& out) {
  const Sets sets = honesty_sets(c);
  if (!ok(run("run", ws, sets, {"--out", (dir / "run").string()}, dir / "run.log"), out, "the run")) return;
  const Records records = read_metrics_records((dir / "run").string());
  std::string why, held;
  if (c.kind == CaseKind::host_reads) {
    why = stray_host_reads(records);
    held = "one read in each of steps 1-3, none elsewhere; two in the logged step 4";
  } else if (c.kind == CaseKind::state_bytes) {
    why = unreported_state(records);
    held = concat(state_figures(records), "; every rank within ", human_bytes(kStateSlackBytes), " and ",
                  kStateSlackFraction * 100, "% of its report");
  } else {
    why = uncounted_traffic(records);
    held = traffic_figures(records);
  }
  out.status = why.empty() ? "pass" : "fail";
  out.detail = why.empty() ? held : why;
}

}  // namespace

bool config_accepts(const Workspace& ws, const std::vector<std::string>& sets, const std::string& log) {
  return run("config validate", ws, sets, {}, log).code == 0;
}

std::string command_line(const std::string& verb, const Workspace& ws, const std::vector<std::string>& sets) {
  std::string line = concat("plait ", verb, " ", ws.base_config);
  for (const auto& s : sets) line += concat(" --set ", s);
  return line;
}

Outcome run_case(const Case& c, const Workspace& ws, int index) {
  const fs::path dir = fs::path(ws.folder) / concat("case-", index);
  fs::create_directories(dir);
  Outcome out{c.group, c.title, "fail", "", "", 0.0};
  const auto start = std::chrono::steady_clock::now();
  switch (c.kind) {
    case CaseKind::equivalence:
      out.reproduce = command_line("check", ws, c.sets) + (c.tolerance > 0 ? concat(" --tolerance ", c.tolerance) : "");
      equivalence(c, ws, dir, out);
      break;
    case CaseKind::resume:
      out.reproduce = concat(command_line("run", ws, c.sets), " --set train.steps=", c.steps, " --set checkpoint.every=",
                             c.steps / 2, " (then resumed from its step ", c.steps / 2, ")");
      resume(c, ws, dir, out);
      break;
    case CaseKind::reshard:
      out.reproduce = concat(command_line("run", ws, c.sets), " --set checkpoint.every=2; then ", command_line("run", ws, c.other),
                             " --set checkpoint.resume_from=<its step-2>");
      reshard(c, ws, dir, out);
      break;
    case CaseKind::host_reads:
    case CaseKind::state_bytes:
    case CaseKind::traffic:
      out.reproduce = command_line("run", ws, honesty_sets(c));
      honesty(c, ws, dir, out);
      break;
    case CaseKind::loss_gap:
      out.reproduce = concat(command_line("run", ws, loss_gap_sets(c.sets)), "; then ", command_line("run", ws, loss_gap_sets(c.other)));
      loss_gap(c, ws, dir, out);
      break;
    case CaseKind::refused:
      out.reproduce = command_line("config validate", ws, c.sets);
      refused(c, ws, dir, out);
      break;
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace plait::verify
