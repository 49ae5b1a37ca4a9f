#!/usr/bin/env python3
"""Crash safety of checkpoints: SIGKILL a whole training job at random moments while it
saves, then resume it, many times over.

Each trial starts `plait run` (2 ranks, a checkpoint every step, so that a random kill
lands in a save as often as in a step), kills every process of the job at a random
moment, and then checks what a restarted job relies on:
  * `plait checkpoint verify RUN` passes: the newest complete checkpoint is whole;
  * `plait run --resume RUN` continues from exactly that checkpoint's step + 1;
  * no folder that looks complete (step-<N>) lacks its index.
Half the trials save synchronously, half with [checkpoint] async = true; half kill at a
random moment, half aim at a save in progress (once its staging folder appears). A trial
whose kill interrupted a save is one that leaves a .step-<N>.partial folder behind.

  .venv/bin/python tools/checkpoint_kill_trials.py --plait build/bin/plait --trials 20

Prints one line per trial and a summary; exits non-zero if any trial failed.
"""
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def complete_steps(root: Path):
    steps = []
    if root.is_dir():
        for d in root.iterdir():
            if d.name.startswith("step-") and (d / "index.json").exists():
                steps.append(int(d.name[5:]))
    return sorted(steps)


def torn_complete_looking(root: Path):
    return [d.name for d in root.iterdir() if d.name.startswith("step-") and not (d / "index.json").exists()] \
        if root.is_dir() else []


def trial(plait: str, work: Path, index: int, rng: random.Random, sets: list) -> dict:
    run = work / f"trial-{index}"
    mode = "async" if index % 2 else "sync"
    args = [plait, "run", str(ROOT / "configs/quickstart.toml"), "--steps", "400", "--out", str(run),
            "--set", "checkpoint.every=1", "--set", "checkpoint.keep_last=3",
            "--set", f"checkpoint.async={'true' if mode == 'async' else 'false'}"] + sets
    job = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    root = run / "checkpoints"
    # Wait for the first committed save, then kill at a random moment of the following ones.
    deadline = time.time() + 120
    while not complete_steps(root) and time.time() < deadline and job.poll() is None:
        time.sleep(0.02)
    time.sleep(rng.uniform(0.0, 2.0))
    if index % 4 >= 2:
        # Aimed: wait for a save to be under way (its staging folder), then a little more.
        while job.poll() is None and not any(d.name.endswith(".partial") for d in root.iterdir()):
            time.sleep(0.001)
        time.sleep(rng.uniform(0.0, 0.03))
    os.killpg(job.pid, signal.SIGKILL)
    job.wait()
    # A save the kill interrupted leaves its staging folder behind.
    during_save = any(d.name.endswith(".partial") for d in root.iterdir()) if root.is_dir() else False
    result = {"trial": index, "mode": mode, "killed_during_save": during_save}
    steps = complete_steps(root)
    result["newest"] = steps[-1] if steps else None
    result["torn_looking_complete"] = torn_complete_looking(root)
    if not steps:
        result["ok"] = False
        result["why"] = "no complete checkpoint before the kill"
        return result
    verify = subprocess.run([plait, "checkpoint", "verify", str(run)], capture_output=True, text=True)
    resumed = work / f"trial-{index}-resumed"
    resume = subprocess.run([plait, "run", str(ROOT / "configs/quickstart.toml"), "--steps", str(steps[-1] + 2),
                             "--out", str(resumed), "--resume", str(run), "--set", "checkpoint.every=1",
                             "--set", "checkpoint.keep_last=3"] + sets, capture_output=True, text=True)
    first = None
    if resume.returncode == 0:
        with open(resumed / "metrics.jsonl") as f:
            first = json.loads(f.readline())["step"]
    result.update(verify_ok=verify.returncode == 0, resume_ok=resume.returncode == 0, resumed_at=first)
    result["ok"] = (verify.returncode == 0 and resume.returncode == 0 and first == steps[-1] + 1
                    and not result["torn_looking_complete"])
    if not result["ok"]:
        result["why"] = (verify.stdout + verify.stderr + resume.stdout[-2000:] + resume.stderr[-2000:]).strip()
    shutil.rmtree(run, ignore_errors=True)
    shutil.rmtree(resumed, ignore_errors=True)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plait", default=str(ROOT / "build/bin/plait"))
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work", default=None, help="folder for the runs (default: a temporary one)")
    ap.add_argument("--set", action="append", default=["model.n_embd=256", "model.n_head=4"],
                    help="extra table.key=value for every run (default: a 2.4M-parameter gpt2, 29 MB checkpoints)")
    a = ap.parse_args()
    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="plait-kill-"))
    work.mkdir(parents=True, exist_ok=True)
    sets = [x for s in a.set for x in ("--set", s)]
    rng = random.Random(a.seed)
    results = []
    for i in range(a.trials):
        r = trial(a.plait, work, i, rng, sets)
        results.append(r)
        print(json.dumps({k: v for k, v in r.items() if k != "why"}), flush=True)
        if not r["ok"]:
            print("  " + r.get("why", "")[-1500:].replace("\n", "\n  "), flush=True)
    ok = sum(r["ok"] for r in results)
    in_save = sum(r["killed_during_save"] for r in results)
    print(f"{ok}/{len(results)} trials resumed from the newest complete checkpoint; "
          f"{in_save} kills landed while a save was in progress; "
          f"{sum(bool(r['torn_looking_complete']) for r in results)} left a step-<N> folder without its index")
    return 0 if ok == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
