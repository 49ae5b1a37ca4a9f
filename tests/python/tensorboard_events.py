#!/usr/bin/env python3
"""plait's TensorBoard event files, read by TensorBoard's own EventAccumulator.

  * A 2-rank zero run of 6 steps logging every 2 (and a checkpoint every 2): every
    number of every metrics.jsonl record (nested ones as "comm/dp.all_gather/ms",
    "ranks/1/peak_mem_bytes") is a scalar of tb/ at that record's step with that value
    (as float32, how TensorBoard keeps scalars), and no scalar is there that the
    records do not hold.
  * A crash after step 6's records but before its checkpoint is simulated (step-6
    removed) and the run restarted with [checkpoint] resume = "auto": it trains steps
    5 and 6 again, and TensorBoard shows each step once, with the restarted run's values
    (its SessionLog START at step 5 purges the first run's from 5 on), as metrics.jsonl does.
  * With [train] tensorboard = false there is no tb/.
Exit status 0 when everything matches.
"""
import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

ROOT = Path(__file__).resolve().parents[2]


def plait_run(plait, out, sets):
    args = [plait, "run", str(ROOT / "configs/quickstart.toml"), "--steps", "6", "--out", str(out),
            "--set", "parallel.data=zero", "--set", "parallel.dp=2", "--set", "train.log_every=2",
            "--set", "checkpoint.every=2", "--set", "checkpoint.keep_last=3"]
    for s in sets:
        args += ["--set", s]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"plait run failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")


def flatten(prefix, value, out):
    if isinstance(value, dict):
        for k, v in value.items():
            flatten(f"{prefix}/{k}" if prefix else k, v, out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            if isinstance(v, dict):
                flatten(f"{prefix}/{i}", v, out)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        out[prefix] = value


def expected(run):
    want = {}  # tag -> {step: value}
    for line in (run / "metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        figures = {}
        for k, v in record.items():
            if k != "step":
                flatten(k, v, figures)
        for tag, v in figures.items():
            want.setdefault(tag, {})[record["step"]] = v
    return want


def compare(run, what):
    acc = EventAccumulator(str(run / "tb"), size_guidance={"scalars": 0})
    acc.Reload()
    want = expected(run)
    got_tags = set(acc.Tags()["scalars"])
    failures = []
    if got_tags != set(want):
        failures.append(f"tags differ: only in tb {sorted(got_tags - set(want))[:5]}, "
                        f"only in metrics.jsonl {sorted(set(want) - got_tags)[:5]}")
    checked = 0
    for tag in sorted(got_tags & set(want)):
        events = acc.Scalars(tag)
        steps = [e.step for e in events]
        if steps != sorted(want[tag]):
            failures.append(f"{tag}: steps {steps}, metrics.jsonl has {sorted(want[tag])}")
            continue
        for e in events:
            if e.value != np.float32(want[tag][e.step]):
                failures.append(f"{tag} at step {e.step}: {e.value} in tb, {want[tag][e.step]} in metrics.jsonl")
            checked += 1
    print(f"{what}: {len(got_tags)} tags, {checked} scalars checked against metrics.jsonl")
    for f in failures[:20]:
        print("  FAIL", f)
    return not failures and checked > 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plait", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    work = Path(a.work)
    shutil.rmtree(work, ignore_errors=True)
    run = work / "run"
    plait_run(a.plait, run, [])
    ok = compare(run, "a run of 6 steps")
    required = {"loss", "lr", "grad_norm", "tokens_per_s", "mfu", "peak_mem_bytes", "comm_ms", "ranks/1/peak_mem_bytes"}
    missing = required - set(expected(run))
    if missing:
        print("  FAIL metrics.jsonl lacks", sorted(missing))
        ok = False
    first_step_ms = expected(run)["step_ms"][6]
    shutil.rmtree(run / "checkpoints" / "step-6")
    plait_run(a.plait, run, ["checkpoint.resume=auto"])
    if len(list((run / "tb").glob("events.out.tfevents.*"))) != 2:
        print("  FAIL the restarted run did not write its own event file")
        ok = False
    if expected(run)["step_ms"][6] == first_step_ms:
        print("  FAIL the restarted run's step 6 has the first run's step time: the comparison would not tell")
        ok = False
    ok = compare(run, "restarted from step 4") and ok
    off = work / "off"
    plait_run(a.plait, off, ["train.tensorboard=false", "checkpoint.every=0"])
    if (off / "tb").exists():
        print("  FAIL [train] tensorboard = false still wrote tb/")
        ok = False
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
