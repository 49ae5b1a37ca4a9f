#!/usr/bin/env python3
"""The planner's time model against measured CPU runs (issue 25's "within 25%").

  tools/plan_validation.py [--plait build/bin/plait] [--steps 6] [--repeats 2] [--only NAME] [--keep DIR]
  tools/plan_validation.py --sweep [--repeats 3] [--keep DIR]

First measures this machine (`plait plan --calibrate --write` into the work folder: the
figures and the runs are taken minutes apart, since this machine's speed drifts by 10-20%
over an hour), then runs each configuration of the set below with `plait run`, each
`--repeats` times (the set once, then again), and asks `plait plan --explain CONFIG
--against RUN --hardware THAT_FILE --json` for the predicted and measured step (the
median of the run's steps after the first; of the repeats, the median run). Prints them
phase by phase. Run it on a quiet machine. Exits 1 when a step is off by more than 25%.

--sweep: (after the same calibration) `plait sweep` of the small model over the data plugins and checkpointing modes
(interleaved repeats), then `plait plan --against SWEEP`: the planner's first choice
against the fastest measured combination. Exits 1 when it is more than 10% slower.

Not part of the test suite (minutes of training); the suite keeps a
short case of it (test_plan_command.cpp).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUICKSTART = os.path.join(ROOT, "configs", "quickstart.toml")

# Two models: the quickstart's GPT-2 widened to 256 over 4 blocks, and GPT-2 124M (both
# at 128 positions: a 124M step on 2 CPU cores takes seconds).
SMALL = ["model.n_embd=256", "model.n_layer=4", "data.seq_len=128", "model.block_size=128"]
GPT2_124M = ["model.size=124m", "data.seq_len=128", "model.block_size=128", "data.micro_batch_size=4"]

STRATEGIES = {
    "ddp": [],
    "zero3": ["parallel.data=zero", "zero.stage=3"],
    "fsdp": ["parallel.data=fsdp"],
    "1f1b-pp2": ["parallel.data=none", "parallel.dp=1", "parallel.pp=2", "parallel.pipeline=1f1b", "train.grad_accum=4"],
    "megatron-tp2": ["parallel.data=none", "parallel.dp=1", "parallel.tp=2", "parallel.tensor=megatron"],
}

LIMIT = 0.25


def cases():
    for model, sets in (("small", SMALL), ("124m", GPT2_124M)):
        for name, extra in STRATEGIES.items():
            yield f"{model}/{name}", sets + extra


def run(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"error: {' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return done.stdout


SWEEP_VARY = ["parallel.data=ddp,zero,fsdp", "train.activation_checkpointing=none,full"]
SWEEP_LIMIT = 0.10


def calibrate(args, work):
    hardware = os.path.join(work, "cpu-local.toml")
    if os.path.exists(hardware):
        os.remove(hardware)
    print(run([args.plait, "plan", "--calibrate", "--write", hardware]).splitlines()[-2], flush=True)
    return hardware


def sweep(args, work, hardware):
    out = os.path.join(work, "sweep")
    shutil.rmtree(out, ignore_errors=True)
    flags = [f for s in SMALL for f in ("--set", s)] + [f for v in SWEEP_VARY for f in ("--vary", v)]
    run([args.plait, "sweep", QUICKSTART, "--steps", str(args.steps), "--repeats", str(args.repeats), "--out", out]
        + flags)
    print(run([args.plait, "plan", "--against", out, "--hardware", hardware]), end="")
    ranking = json.loads(run([args.plait, "plan", "--against", out, "--hardware", hardware, "--json"]))
    shortfall = ranking["first_choice_shortfall"]
    print(f"first choice {ranking['first_choice']}, fastest {ranking['fastest']}: {100 * shortfall:.1f}% behind "
          f"(limit {100 * SWEEP_LIMIT:.0f}%)")
    return 1 if shortfall > SWEEP_LIMIT else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plait", default=os.path.join(ROOT, "build", "bin", "plait"))
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--only", help="run the cases whose name contains this")
    ap.add_argument("--keep", help="keep the run folders here")
    ap.add_argument("--sweep", action="store_true", help="the sweep check instead of the step times")
    ap.add_argument("--repeats", type=int, help="runs of each configuration (default 2; the sweep's: 3)")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="plan-validation-")
    os.makedirs(work, exist_ok=True)
    args.repeats = args.repeats or (3 if args.sweep else 2)
    if args.sweep:
        try:
            return sweep(args, work, calibrate(args, work))
        finally:
            if not args.keep:
                shutil.rmtree(work, ignore_errors=True)
    hardware = calibrate(args, work)
    chosen = [(name, sets) for name, sets in cases() if not args.only or args.only in name]
    reports = {name: [] for name, _ in chosen}
    for repeat in range(args.repeats):
        for name, sets in chosen:
            flags = [f for s in sets for f in ("--set", s)]
            out = os.path.join(work, f"{name.replace('/', '-')}.r{repeat + 1}")
            shutil.rmtree(out, ignore_errors=True)
            # No checkpoint: a 124M run's final one is 1.5 GB, and twenty of them fill a disk.
            run([args.plait, "run", QUICKSTART, "--steps", str(args.steps), "--out", out, "--set", "checkpoint.final=false"]
                + flags)
            reports[name].append(json.loads(run([args.plait, "plan", "--explain", QUICKSTART, "--against", out,
                                                 "--hardware", hardware, "--json"] + flags)))
    rows, worst = [], 0.0
    for name, _ in chosen:
        runs = sorted(reports[name], key=lambda r: r["against"]["phases_ms"]["step"]["measured"])
        phases = runs[(len(runs) - 1) // 2]["against"]["phases_ms"]
        step = phases["step"]
        ratio = step["measured"] / step["predicted"]
        worst = max(worst, abs(ratio - 1))
        rows.append((name, phases, ratio))
        spread = ", ".join(f"{r['against']['phases_ms']['step']['measured']:.1f}" for r in runs)
        print(f"{name:22s} predicted {step['predicted']:9.1f} ms  measured {step['measured']:9.1f} ms  "
              f"measured/predicted {ratio:5.2f}  (runs: {spread})", flush=True)
    print("\nphase by phase (predicted / measured, ms):")
    for name, phases, _ in rows:
        cells = "  ".join(f"{k.split(' (')[0]} {p['predicted']:.1f}/{p['measured']:.1f}" for k, p in phases.items()
                          if k != "step" and (p["predicted"] or p["measured"]))
        print(f"{name:22s} {cells}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{len(rows)} runs; the worst step off by {100 * worst:.1f}% (limit {100 * LIMIT:.0f}%)")
    return 1 if worst > LIMIT else 0


if __name__ == "__main__":
    sys.exit(main())
