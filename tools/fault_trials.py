#!/usr/bin/env python3
"""Fault trials: jobs that must survive injected faults by themselves ([distributed]
max_restarts) and end exactly where a job that was never interrupted ends.

Each trial runs a 4-rank job of the tiny model in float64 (zero stage 3 on dp 4, or dp 2
x pp 2 with 1f1b and two microbatches; a checkpoint every 3 steps) with one or two
faults drawn at random: kill, segv, exit, hang or abort of a random rank at a random
step, or a corrupted checkpoint file followed by a kill (the restart must pass over the
damaged checkpoint). A second fault, when drawn, strikes in the start after the first
restart. Every trial must:
  * exit 0, having restarted once per fault that ends a start;
  * end with final weights identical, bit for bit, to the uninterrupted job's
    (`plait checkpoint diff`), and the same losses at every step;
  * have a restarts.json that names every fault and times its recovery.

  .venv/bin/python tools/fault_trials.py --plait build/bin/plait --trials 20 --out /tmp/fault-trials

Prints one line per trial and the figures (faults survived; detection, restart and
recovery times, median and worst; steps lost); writes trials.json and summary.md in
--out; exits non-zero if any trial failed.
"""
import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEPS, EVERY, TIMEOUT_S = 12, 3, 3
MESHES = {
    "zero3-dp4": ["--set", "parallel.dp=4", "--set", 'parallel.data="zero"', "--set", "zero.stage=3"],
    "dp2xpp2-1f1b": ["--set", "parallel.dp=2", "--set", "parallel.pp=2", "--set", 'parallel.pipeline="1f1b"',
                     "--set", "train.grad_accum=2"],
}
KINDS = ["kill", "segv", "exit", "hang", "abort", "corrupt"]


def common(mesh):
    return ["run", str(ROOT / "configs/quickstart.toml"), "--steps", str(STEPS), "--set", 'train.dtype="float64"',
            "--set", f"checkpoint.every={EVERY}", "--set", f"distributed.collective_timeout_s={TIMEOUT_S}"] + MESHES[mesh]


def draw_faults(rng, kind):
    """One fault of `kind` in the first start (a corrupt one is followed by a kill that makes
    the restart meet it), and by chance a second in the next start."""
    rank, step = rng.randrange(4), rng.randrange(2, STEPS + 1)
    if kind == "corrupt":
        saved = rng.choice([s for s in range(EVERY, STEPS - 1, EVERY)])
        faults = [f"corrupt rank={rank} step={saved}", f"kill rank={rng.randrange(4)} step={saved + 1}"]
        resumed = saved - EVERY  # the damaged checkpoint is passed over
    else:
        faults = [f"{kind} rank={rank} step={step}"]
        resumed = (step - 1) // EVERY * EVERY  # a fault at a step's start: the checkpoints before it are whole
    ending = 1
    if rng.random() < 0.5:
        # In the next start, after its first step (so that the restart's recovery is timed)
        # at a step it trains again or later: one it will meet.
        second = rng.choice(["kill", "segv", "exit", "hang", "abort"])
        faults.append(f"{second} rank={rng.randrange(4)} step={rng.randrange(resumed + 2, STEPS + 1)} attempt=1")
        ending += 1
    return faults, ending


def losses(run):
    with open(run / "metrics.jsonl") as f:
        return [(r["step"], r["loss"]) for r in map(json.loads, f)]


def trial(plait, out, index, mesh, faults, restarts_expected, straight):
    run = out / f"trial-{index:02d}"
    sets = ["--set", "debug.faults=[" + ", ".join(f'"{f}"' for f in faults) + "]"]
    start = time.time()
    r = subprocess.run([plait] + common(mesh) + ["--out", str(run), "--max-restarts", "2"] + sets,
                       capture_output=True, text=True)
    result = {"trial": index, "mesh": mesh, "faults": faults, "seconds": round(time.time() - start, 1), "ok": False}
    if r.returncode != 0:
        result["why"] = f"exit {r.returncode}: " + (r.stderr.strip().splitlines() or ["?"])[0]
        return result
    records = json.loads((run / "restarts.json").read_text()) if (run / "restarts.json").exists() else []
    result["restarts"] = records
    diff = subprocess.run([plait, "checkpoint", "diff", str(straight), str(run)], capture_output=True, text=True)
    if len(records) != restarts_expected:
        result["why"] = f"{len(records)} restarts for {restarts_expected} faults that end a start"
    elif diff.returncode != 0:
        result["why"] = "final weights differ: " + diff.stdout.strip()
    elif losses(run) != losses(straight):
        result["why"] = "losses differ"
    elif any(rec["fault"] is None or rec["restart_to_first_step_s"] is None for rec in records):
        result["why"] = "a restart record misses its fault or its recovery time"
    else:
        result["ok"] = True
        shutil.rmtree(run / "checkpoints", ignore_errors=True)  # keep the records, not the weights
    return result


def spread(values):
    if not values:
        return "n/a"
    return f"median {statistics.median(values):.2f} s, worst {max(values):.2f} s (n={len(values)})"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plait", default=str(ROOT / "build/bin/plait"))
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="/tmp/fault-trials")
    a = ap.parse_args()
    a.plait = str(Path(a.plait).resolve())
    out = Path(a.out)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    rng = random.Random(a.seed)
    straight = {}
    for mesh in MESHES:
        straight[mesh] = out / f"straight-{mesh}"
        subprocess.run([a.plait] + common(mesh) + ["--out", str(straight[mesh])], check=True, capture_output=True)
    results = []
    for i in range(a.trials):
        mesh = list(MESHES)[i % len(MESHES)]
        faults, ending = draw_faults(rng, KINDS[i % len(KINDS)])
        res = trial(a.plait, out, i, mesh, faults, ending, straight[mesh])
        results.append(res)
        times = ", ".join(f"{rec['fault']}: noticed {rec['fault_to_notice_s']} s, first step "
                          f"{rec['fault_to_first_step_s']} s after" for rec in res.get("restarts", []))
        print(f"trial {i:2d} {mesh:13s} {'ok  ' if res['ok'] else 'FAIL'} {res['seconds']:5.1f} s  "
              f"{'; '.join(faults)}  [{times}]{'' if res['ok'] else '  ' + res['why']}", flush=True)
    records = [rec for res in results for rec in res.get("restarts", [])]
    kinds = lambda k: [rec for rec in records if (rec["fault"] or "").startswith(k)]
    lines = [
        f"trials: {len(results)}, passed {sum(r['ok'] for r in results)} (final weights and losses identical to "
        f"the uninterrupted job's); faults survived: {len(records)} restarts, "
        f"{sum(len(r['faults']) for r in results if r['ok'])} faults injected in passing trials",
        f"fault -> noticed, kill/segv/exit/abort: "
        f"{spread([r['fault_to_notice_s'] for k in ('kill', 'segv', 'exit', 'abort') for r in kinds(k)])}",
        f"fault -> noticed, hang (collective_timeout_s = {TIMEOUT_S}): "
        f"{spread([r['fault_to_notice_s'] for r in kinds('hang')])}",
        f"noticed -> new start (stop every rank, agree, pick a sound checkpoint): "
        f"{spread([r['notice_to_restart_s'] for r in records if r['notice_to_restart_s'] is not None])}",
        f"new start -> first step: "
        f"{spread([r['restart_to_first_step_s'] for r in records if r['restart_to_first_step_s'] is not None])}",
        f"fault -> first step after it: "
        f"{spread([r['fault_to_first_step_s'] for r in records if r['fault_to_first_step_s'] is not None])}",
        f"steps lost per restart: median {statistics.median([r['steps_lost'] for r in records]) if records else 0}, "
        f"worst {max([r['steps_lost'] for r in records], default=0)}; checkpoints passed over as damaged: "
        f"{sum(len(r['refused_checkpoints']) for r in records)}",
    ]
    print("\n".join(lines))
    (out / "trials.json").write_text(json.dumps(results, indent=1) + "\n")
    (out / "summary.md").write_text("\n".join(f"- {l}" for l in lines) + "\n")
    sys.exit(0 if all(r["ok"] for r in results) else 1)


if __name__ == "__main__":
    main()
