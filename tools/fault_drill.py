#!/usr/bin/env python3
"""Fault drill: one of each fault a job must survive or stop for, on one 4-rank job, each
held against a job that was never interrupted.

The job: configs/quickstart.toml for 12 steps, the tiny model in float64 on 4 DDP ranks, a
checkpoint every 3 steps, collectives timing out after 3 s, at most 2 restarts. The faults:
  1. kill        `[debug] faults` "kill rank=2 step=5"
  2. SIGSTOP     rank 2 stopped (kill -STOP, from outside) once its log shows step 4: the
                 others' collectives time out and the launcher restarts the job
  3. hang        "hang rank=1 step=6"
  4. segv        "segv rank=3 step=4"
  5. corrupt     "corrupt rank=1 step=6" then "kill rank=0 step=8": the restart passes over
                 the damaged step 6 and resumes from step 3
  6. slow        "slow rank=3 step=2 ms=150": no restart; `plait debug RUN --wait 20` while
                 it runs, after step 6, must name rank 3 a straggler
  7. Ctrl-C      SIGINT to the launcher after step 7: exit 130, status "stopped"; then
                 `plait run --resume RUN --out RUN2`, whose steps continue it
  8. save        SIGKILL rank 1 while a checkpoint save (step 6 or later) is in flight (its
                 .step-N.partial staging folder): the restart resumes from the checkpoint before
For each: restarted (how many times), exit code and final state (status.json), every
step's loss bit-equal to the uninterrupted job's (metrics.jsonl), seconds to detect and to
recover (restarts.json; for the faults sent from outside, from the signal to the launcher's
notice as status.json shows it), and the culprit restarts.json names and the one `plait
debug RUN` names (in its paragraph for the attempt the fault ended; where one sentence
names several ranks, "ranks 0, 3 never entered ...", the one the paragraph says crashed or
wrote no record, as restarts.json decides), against the rank at fault.

  .venv/bin/python tools/fault_drill.py --plait build/bin/plait --out /tmp/fault-drill

Prints one line per fault and the table; writes drill.json and drill.md (the table) in
--out; exits non-zero if any row is wrong.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEPS, EVERY, TIMEOUT_S = 12, 3, 3
JOB_LIMIT_S = 300  # a job still running after this is stopped, and its row fails
STEP_LINE = re.compile(r"\bstep\s+(\d+)/\d+ \|")
STAGING = re.compile(r"^\.step-(\d+)\.(?:partial|staging)$")


def job_argv(plait, run, faults=(), extra=()):
    argv = [plait, "run", str(ROOT / "configs/quickstart.toml"), "--steps", str(STEPS), "--out", str(run),
            "--set", 'train.dtype="float64"', "--set", "parallel.dp=4", "--set", 'parallel.data="ddp"',
            "--set", f"checkpoint.every={EVERY}", "--set", f"distributed.collective_timeout_s={TIMEOUT_S}",
            "--max-restarts", "2"] + list(extra)
    if faults:
        argv += ["--set", "debug.faults=[" + ", ".join(f'"{f}"' for f in faults) + "]"]
    return argv


def read_json(path, default=None):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return default


def metrics(run):
    """(step, record) of every whole line of metrics.jsonl."""
    out = []
    try:
        lines = (Path(run) / "metrics.jsonl").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            continue  # a line being written
        out.append((rec["step"], rec))
    return out


def losses(run):
    """Every step's loss as its float64 bits (float.hex), in the file's order."""
    return [(step, float(rec["loss"]).hex()) for step, rec in metrics(run)]


def parent_pid(pid):
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2:].split()[1])


def rank_pids(run):
    return {r["rank"]: r["pid"] for r in read_json(Path(run) / "ranks.json", [])}


class Job:
    """One `plait run` in a session of its own, watched: the time each status.json state and
    each metrics.jsonl step was first seen, and when a record first named a straggler."""

    def __init__(self, argv, run):
        self.run = Path(run)
        self.argv = argv
        self.output = open(self.run.parent / f"{self.run.name}.out", "w")
        self.started = time.time()
        self.proc = subprocess.Popen(argv, stdout=self.output, stderr=subprocess.STDOUT, start_new_session=True)
        self.states, self.steps = {}, {}
        self.straggler = None  # (time, the record's straggler)
        self._next_look, self._metrics_stat = 0.0, None

    def look(self):
        now = time.time()
        if now < self._next_look:
            return
        self._next_look = now + 0.01
        state = (read_json(self.run / "status.json") or {}).get("state")
        if state:
            self.states.setdefault(state, now)
        try:
            st = (self.run / "metrics.jsonl").stat()
        except OSError:
            return
        if (st.st_size, st.st_mtime_ns) == self._metrics_stat:
            return
        self._metrics_stat = (st.st_size, st.st_mtime_ns)
        for step, rec in metrics(self.run):
            self.steps.setdefault(step, now)
            if self.straggler is None and rec.get("straggler"):
                self.straggler = (now, rec["straggler"])

    def wait_until(self, cond, timeout=JOB_LIMIT_S, interval=0.01):
        """True once cond() holds; False if the job ended first or the time ran out."""
        deadline = self.started + timeout
        while True:
            self.look()
            if cond():
                return True
            if self.proc.poll() is not None or time.time() > deadline:
                return False
            time.sleep(interval)

    def finish(self):
        """The exit code; a job past JOB_LIMIT_S is killed (its ranks too) and gives None."""
        self.wait_until(lambda: False)
        if self.proc.poll() is None:
            self.kill_all()
            self.proc.wait()
            self.output.close()
            return None
        self._next_look = 0.0
        self.look()
        self.output.close()
        return self.proc.returncode

    def kill_all(self):
        for pid in rank_pids(self.run).values():
            if parent_pid(pid) == self.proc.pid:
                os.kill(pid, signal.SIGKILL)
        os.killpg(self.proc.pid, signal.SIGKILL)

    def max_step(self):
        return max(self.steps, default=0)


def rank_log_step(run, rank):
    try:
        text = (Path(run) / f"rank-{rank}.log").read_text(errors="replace")
    except OSError:
        return 0
    return max((int(m) for m in STEP_LINE.findall(text)), default=0)


def rank_list(text):
    """'0, 2' or '0–3' (plait's rank lists) -> [0, 2] or [0, 1, 2, 3]."""
    ranks = []
    for part in text.split(","):
        bounds = [int(x) for x in re.split(r"[–-]", part.strip()) if x]
        ranks += list(range(bounds[0], bounds[-1] + 1))
    return ranks


NAMINGS = {
    "hang": re.compile(r"\branks? ([0-9][0-9, –-]*?) (?:never entered|held up)\b"),
    "crash": re.compile(r"\brank (\d+) crashed\b"),
    "straggler": re.compile(r"\brank (\d+) came last\b"),
}


def named_culprit(paragraph, order=("hang", "crash", "straggler")):
    """The ranks the first sentence of the given kinds names, and the kind; ([], None) if none."""
    for kind in order:
        m = NAMINGS[kind].search(paragraph)
        if m:
            return rank_list(m.group(1)), kind
    return [], None


def where_it_began(ranks, paragraph):
    """Of several ranks one sentence names ("ranks 0, 3 never entered ..."), the one the
    paragraph says crashed or wrote no record (the others the launcher stopped meanwhile:
    plait's own rule for restarts.json); all of them when that is not exactly one."""
    if len(ranks) < 2:
        return ranks
    began = [r for r in ranks if re.search(rf"\brank {r} (?:crashed|wrote no flight record)", paragraph)]
    return began if len(began) == 1 else ranks


def debug_sections(text):
    """plait debug's output -> {attempt: paragraph}; a job that never restarted: {None: text}."""
    heads = list(re.finditer(r"^attempt (\d+) \(.*\):$", text, re.M))
    if not heads:
        return {None: text}
    out = {}
    for i, h in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        out[int(h.group(1))] = text[h.end():end].strip()
    return out


def plait_debug(plait, run, wait=None):
    argv = [plait, "debug", str(run)] + (["--wait", str(wait)] if wait is not None else [])
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    return (r.stdout + r.stderr).strip()


def debug_culprit(text, records, order=("hang", "crash", "straggler")):
    """The culprit plait debug names in the attempt the fault ended (the one the first
    restart record with a fault, or else the first record, closed)."""
    sections = debug_sections(text)
    attempt = None
    if records:
        ended = next((r for r in records if r.get("fault")), records[0])
        attempt = ended["restart"] - 1
    paragraph = sections.get(attempt, sections.get(None, ""))
    named, kind = named_culprit(paragraph, order)
    return {"attempt": attempt, "paragraph": paragraph, "named": named, "kind": kind,
            "ranks": where_it_began(named, paragraph)}


def losses_match(runs, straight):
    """Every record of every run has the uninterrupted run's loss at its step, bit for bit,
    and together they cover every step of it. (ok, why)."""
    want = dict(losses(straight))
    seen = set()
    for run in runs:
        for step, loss in losses(run):
            if want.get(step) != loss:
                theirs = float.fromhex(want[step]) if step in want else None
                return False, f"{Path(run).name}: step {step} loss {float.fromhex(loss)!r}, uninterrupted {theirs!r}"
            seen.add(step)
    missing = sorted(set(want) - seen)
    return (not missing), (f"steps missing: {missing}" if missing else "")


def restart_culprit(records):
    """The culprit of the restart the fault caused, as restarts.json names it."""
    if not records:
        return None, {}
    rec = next((r for r in records if r.get("fault")), records[0])
    return rec.get("rank"), rec


def check_restart_record(rec, expected_rank, problems):
    culprit = rec.get("culprit") or {}
    if rec.get("rank") != expected_rank:
        problems.append(f"restarts.json names rank {rec.get('rank')}, not {expected_rank}")
    if culprit.get("rank") != rec.get("rank"):
        problems.append(f"restarts.json's culprit.rank {culprit.get('rank')} differs from its rank {rec.get('rank')}")
    for key in ("culprit", "reported_by_rank"):
        if key not in rec:
            problems.append(f"restarts.json has no {key!r}")


def timing_external(job, signalled, rec):
    """Detection and recovery of a fault sent from outside: from the signal to the
    launcher's notice (status.json turning 'stopping', as this drill saw it), then the
    record's notice -> restart -> first step."""
    noticed = job.states.get("stopping") or job.states.get("restarting")
    if noticed is None or signalled is None:
        return None, None
    detect = noticed - signalled
    rest = [rec.get("notice_to_restart_s"), rec.get("restart_to_first_step_s")]
    return round(detect, 3), (round(detect + sum(rest), 3) if None not in rest else None)


def base_row(name, fault, expected, job, rc, plait):
    """What every row reports: restarts, exit, state, restarts.json's culprit and plait debug's."""
    status = read_json(job.run / "status.json", {})
    records = read_json(job.run / "restarts.json", [])
    debug = plait_debug(plait, job.run)
    (job.run.parent / f"{job.run.name}.debug.txt").write_text(debug + "\n")
    culprit, rec = restart_culprit(records)
    return {"name": name, "fault": fault, "expected": expected, "run": str(job.run), "exit": rc,
            "state": status.get("state"), "status_reason": status.get("reason"), "restarts": len(records),
            "restart_records": records, "culprit_restarts": culprit, "restart_record": rec,
            "debug_output": debug, "debug": debug_culprit(debug, records),
            "seconds": round(time.time() - job.started, 1),
            "problems": []}


def check_restarted_row(row, straight, expected_restarts=1, resumed_from=None):
    """A fault that must restart the job once and end it exactly as the uninterrupted one."""
    p = row["problems"]
    if row["exit"] != 0 or row["state"] != "finished":
        p.append(f"exit {row['exit']}, state {row['state']} (want 0, finished): {row['status_reason']}")
    if row["restarts"] != expected_restarts:
        p.append(f"{row['restarts']} restarts, want {expected_restarts}")
    ok, why = losses_match([row["run"]], straight)
    row["losses_equal"] = ok
    if not ok:
        p.append("losses differ: " + why)
    if row["restart_record"]:
        check_restart_record(row["restart_record"], row["expected"], p)
        got = row["restart_record"].get("resumed_from_step")
        if resumed_from is not None and got != resumed_from:
            p.append(f"resumed from step {got}, want {resumed_from}")
    if row["debug"]["ranks"] != [row["expected"]]:
        p.append(f"plait debug names {row['debug']['ranks'] or 'no rank'} "
                 f"(attempt {row['debug']['attempt']}), not {row['expected']}")
    return row


def injected(plait, out, straight, name, faults, expected, resumed_from=None):
    """A fault of `[debug] faults`: its own restart record times it."""
    job = Job(job_argv(plait, out / name, faults), out / name)
    rc = job.finish()
    row = base_row(name, " + ".join(faults), expected, job, rc, plait)
    rec = row["restart_record"]
    row["detect_s"], row["recover_s"] = rec.get("fault_to_notice_s"), rec.get("fault_to_first_step_s")
    row["timing_basis"] = "restarts.json: fault_to_notice_s, fault_to_first_step_s"
    return check_restarted_row(row, straight, resumed_from=resumed_from)


def sigstop(plait, out, straight):
    """Rank 2 stopped from outside once its log shows step 4; nothing resumes it."""
    name, run = "sigstop", out / "sigstop"
    job = Job(job_argv(plait, run), run)
    signalled, note = None, ""
    if job.wait_until(lambda: rank_log_step(run, 2) >= 4, interval=0.02):
        pid = rank_pids(run)[2]
        os.kill(pid, signal.SIGSTOP)
        signalled, note = time.time(), f"SIGSTOP pid {pid} at rank 2's step {rank_log_step(run, 2)}"
    rc = job.finish()
    row = base_row(name, "SIGSTOP rank 2 after its step 4 (outside)", 2, job, rc, plait)
    row["note"] = note or "rank 2's log never showed step 4"
    row["detect_s"], row["recover_s"] = timing_external(job, signalled, row["restart_record"])
    row["timing_basis"] = "signal -> status.json stopping (seen), + notice_to_restart_s + restart_to_first_step_s"
    if signalled is None:
        row["problems"].append(row["note"])
    return check_restarted_row(row, straight)


def slow(plait, out, straight):
    """A rank slowed 150 ms a step: no restart; plait debug, asked while it runs, names it."""
    name, run = "slow", out / "slow"
    fault = "slow rank=3 step=2 ms=150"
    job = Job(job_argv(plait, run, [fault]), run)
    live = None
    if job.wait_until(lambda: job.max_step() >= 6):
        live = plait_debug(plait, run, wait=20)
        (out / "slow.debug-live.txt").write_text(live + "\n")
    rc = job.finish()
    row = base_row(name, fault, 3, job, rc, plait)
    row["debug_live_output"] = live
    row["debug"] = debug_culprit(live or "", [], order=("straggler", "crash", "hang"))
    strikes = [json.loads(l) for l in (run / "faults.jsonl").read_text().splitlines()] \
        if (run / "faults.jsonl").exists() else []
    row["metrics_straggler"] = job.straggler[1] if job.straggler else None
    row["detect_s"] = round(job.straggler[0] - strikes[0]["at_us"] / 1e6, 3) if job.straggler and strikes else None
    row["recover_s"] = None
    row["timing_basis"] = "slow's first strike (faults.jsonl) -> first metrics record naming a straggler (seen)"
    p = row["problems"]
    if rc != 0 or row["state"] != "finished" or row["restarts"]:
        p.append(f"exit {rc}, state {row['state']}, {row['restarts']} restarts (want 0, finished, none)")
    row["losses_equal"], why = losses_match([run], straight)
    if not row["losses_equal"]:
        p.append("losses differ: " + why)
    if live is None:
        p.append("the job never reached step 6 while running: plait debug was not asked")
    elif row["debug"]["ranks"] != [3] or row["debug"]["kind"] != "straggler":
        p.append(f"plait debug (live) names {row['debug']['ranks'] or 'no rank'} as {row['debug']['kind']}, "
                 "not rank 3 a straggler")
    return row


def ctrl_c(plait, out, straight):
    """SIGINT to the launcher after step 7 (130, stopped), then --resume into a new folder."""
    name, run, run2 = "ctrl-c", out / "ctrl-c", out / "ctrl-c-resumed"
    job = Job(job_argv(plait, run), run)
    signalled, note = None, ""
    if job.wait_until(lambda: job.max_step() >= 7, interval=0.02):
        launcher = parent_pid(rank_pids(run).get(0)) or job.proc.pid
        note = f"SIGINT pid {launcher} (the Popen pid is {job.proc.pid}) after step {job.max_step()}"
        os.kill(launcher, signal.SIGINT)
        signalled = time.time()
    rc = job.finish()
    row = base_row(name, "Ctrl-C (SIGINT to the launcher after step 7), then --resume", "none", job, rc, plait)
    row["note"] = note or "metrics.jsonl never showed step 7"
    stopped_at = job.states.get("stopped") or job.states.get("stopping")
    row["detect_s"] = round(stopped_at - signalled, 3) if stopped_at and signalled else None
    resumed = Job(job_argv(plait, run2, extra=["--resume", str(run)]), run2)
    resumed.wait_until(lambda: resumed.steps)
    first = min(resumed.steps.values(), default=None)
    rc2 = resumed.finish()
    row["recover_s"] = round(first - resumed.started, 3) if first else None
    row["timing_basis"] = "SIGINT -> status.json stopping/stopped (seen); resume's start -> its first step (seen)"
    row["resume"] = {"run": str(run2), "exit": rc2, "state": (read_json(run2 / "status.json", {})).get("state"),
                     "first_step": min((s for s, _ in metrics(run2)), default=None)}
    check_ctrl_c(row, straight)
    return row


def check_ctrl_c(row, straight):
    p = row["problems"]
    if row["exit"] != 130 or row["state"] != "stopped":
        p.append(f"exit {row['exit']}, state {row['state']} (want 130, stopped): {row['status_reason']}")
    if row["restarts"]:
        p.append(f"{row['restarts']} restarts after a stop asked for")
    r = row["resume"]
    if r["exit"] != 0 or r["state"] != "finished":
        p.append(f"the resumed run: exit {r['exit']}, state {r['state']} (want 0, finished)")
    row["losses_equal"], why = losses_match([row["run"], r["run"]], straight)
    if not row["losses_equal"]:
        p.append("losses differ: " + why)
    paragraph = row["debug"]["paragraph"]
    if not paragraph.startswith("The job stopped as asked"):
        p.append("plait debug does not say the job was stopped as asked")
    row["debug"]["ranks"] = row["debug"]["named"] = []  # ranks it mentions were stopped where they were, not culprits


def staging_step(root, least):
    """The step of a save in flight (its staging folder) of step >= least, or None."""
    try:
        names = os.listdir(root)
    except OSError:
        return None
    steps = [int(m.group(1)) for m in map(STAGING.match, names) if m and int(m.group(1)) >= least]
    return min(steps, default=None)


def save_kill_once(plait, out, attempt):
    """One try: SIGKILL rank 1 once a save of step >= 6 is staged. (job, rc, step, signalled)."""
    run = out / f"save-kill-{attempt}"
    job = Job(job_argv(plait, run), run)
    root, pid, step, signalled = run / "checkpoints", None, None, None

    def staged():
        nonlocal pid, step
        if pid is None and job.max_step() >= 2:
            pid = rank_pids(run).get(1)
        step = staging_step(root, 2 * EVERY)
        return step is not None and pid is not None

    if job.wait_until(staged, interval=0.0005):
        os.kill(pid, signal.SIGKILL)
        signalled = time.time()
    return job, job.finish(), step, signalled


def save_kill(plait, out, straight, tries=3):
    """A save cut short: the restart must resume from the checkpoint before it. A kill that
    came after rank 1's part was written lets the save finish: tried again, up to `tries`."""
    for attempt in range(tries):
        job, rc, step, signalled = save_kill_once(plait, out, attempt)
        rec = restart_culprit(read_json(job.run / "restarts.json", []))[1]
        if step is None or rec.get("resumed_from_step") != step:
            break  # the kill landed inside the save (or never happened): this is the row
    row = base_row("save-kill", f"SIGKILL rank 1 in the save of step {step} (outside)", 1, job, rc, plait)
    row["tries"] = attempt + 1
    row["detect_s"], row["recover_s"] = timing_external(job, signalled, row["restart_record"])
    row["timing_basis"] = "signal -> status.json stopping (seen), + notice_to_restart_s + restart_to_first_step_s"
    if step is None:
        row["problems"].append("no save of step >= 6 was seen in flight")
        return check_restarted_row(row, straight)
    row["launcher_tidied"] = [l for l in (job.run / "launcher.log").read_text().splitlines()
                              if f".step-{step}." in l]
    return check_restarted_row(row, straight, resumed_from=step - EVERY)


def cell(v, digits=2):
    return "—" if v is None else (f"{v:.{digits}f}" if isinstance(v, float) else str(v))


def table(rows):
    head = ("| fault | restarted | exit/state | losses equal | detect s | recover s | culprit (restarts.json) "
            "| culprit (plait debug) | expected | ok |\n|" + "---|" * 10)
    lines = [head]
    for r in rows:
        restarted = f"yes ({r['restarts']})" if r["restarts"] else "no"
        exit_state = f"{r['exit']}/{r['state']}"
        if "resume" in r:
            exit_state += f"; resumed {r['resume']['exit']}/{r['resume']['state']}"
        rec = r["restart_record"]
        by_restarts = "—" if not rec else f"{rec.get('rank')} (reported by {rec.get('reported_by_rank')})"
        if r["name"] == "slow" and r.get("metrics_straggler"):
            by_restarts = f"— (metrics: straggler rank {r['metrics_straggler']['rank']})"
        d = r["debug"]
        by_debug = ("stopped as asked" if r["name"] == "ctrl-c" and not d["ranks"]
                    else ", ".join(map(str, d["ranks"])) + f" ({d['kind']})" if d["ranks"] else "none named")
        if d.get("named", d["ranks"]) != d["ranks"]:
            by_debug += f"; the sentence names {', '.join(map(str, d['named']))}"
        lines.append(f"| {r['fault']} | {restarted} | {exit_state} | {'yes' if r.get('losses_equal') else 'NO'} "
                     f"| {cell(r.get('detect_s'))} | {cell(r.get('recover_s'))} | {by_restarts} | {by_debug} "
                     f"| {r['expected']} | {'ok' if not r['problems'] else 'FAIL'} |")
    return "\n".join(lines)


def straight_run(plait, out):
    run = out / "straight"
    job = Job(job_argv(plait, run), run)
    rc = job.finish()
    if rc != 0 or len(metrics(run)) != STEPS:
        sys.exit(f"the uninterrupted run failed (exit {rc}); see {run}.out")
    return run


def run_drill(plait, out):
    straight = straight_run(plait, out)
    print(f"uninterrupted run: {len(metrics(straight))} steps", flush=True)
    trials = [
        lambda: injected(plait, out, straight, "kill", ["kill rank=2 step=5"], 2),
        lambda: sigstop(plait, out, straight),
        lambda: injected(plait, out, straight, "hang", ["hang rank=1 step=6"], 1),
        lambda: injected(plait, out, straight, "segv", ["segv rank=3 step=4"], 3),
        lambda: injected(plait, out, straight, "corrupt", ["corrupt rank=1 step=6", "kill rank=0 step=8"], 0,
                         resumed_from=3),
        lambda: slow(plait, out, straight),
        lambda: ctrl_c(plait, out, straight),
        lambda: save_kill(plait, out, straight),
    ]
    rows = []
    for trial in trials:
        row = trial()
        rows.append(row)
        print(f"{'ok  ' if not row['problems'] else 'FAIL'} {row['fault']}  ({row['seconds']} s)"
              + "".join(f"\n     {p}" for p in row["problems"]), flush=True)
    return straight, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plait", default=str(ROOT / "build/bin/plait"))
    ap.add_argument("--out", default="/tmp/fault-drill")
    a = ap.parse_args()
    plait = str(Path(a.plait).resolve())
    out = Path(a.out).resolve()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    start = time.time()
    straight, rows = run_drill(plait, out)
    seconds = round(time.time() - start, 1)
    md = table(rows)
    print(md)
    print(f"{sum(not r['problems'] for r in rows)}/{len(rows)} rows ok in {seconds} s")
    (out / "drill.json").write_text(json.dumps({"plait": plait, "seconds": seconds, "straight": str(straight),
                                                "rows": rows}, indent=1) + "\n")
    problems = "".join(f"\n- {r['name']}: {p}" for r in rows for p in r["problems"])
    (out / "drill.md").write_text(md + f"\n\n{seconds} s.\n" + (f"\nProblems:{problems}\n" if problems else ""))
    sys.exit(0 if all(not r["problems"] for r in rows) else 1)


if __name__ == "__main__":
    main()
