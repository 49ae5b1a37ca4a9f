#!/usr/bin/env python3
"""Benchmark: how long `plait plan` takes to search the whole space (issue 25: a 70B
model on 4,096 GPUs in under 10 s on this machine).

  tools/bench/plan_search.py [--plait build/bin/plait] [--repeats 3] [--limit 10]

Runs each search below `--repeats` times, in turn, and prints the candidates and the
median of the search's own time (the seconds `plait plan --json` reports: the search, not
the process's start). Exits 1 when the issue's case (the first) takes more than `--limit`
seconds. One core is used; run it on a quiet machine.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SEARCHES = [
    ["--model", "llama-70b", "--gpus", "4096", "--hardware", "h100-sxm"],
    ["--model", "llama-70b", "--gpus", "4096", "--hardware", "h100-sxm", "--global-batch", "1024"],
    ["--model", "llama-70b", "--gpus", "1024", "--hardware", "h100-sxm", "--global-batch", "512"],
    ["--model", "llama-7b", "--gpus", "64", "--hardware", "h100-sxm"],
]


def search(plait, args):
    done = subprocess.run([plait, "plan", *args, "--top", "1", "--json"], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"error: plait plan {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    answer = json.loads(done.stdout[done.stdout.find("{"):])
    return answer["candidates"], answer["seconds"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plait", default=os.path.join(ROOT, "build", "bin", "plait"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--limit", type=float, default=10.0)
    args = ap.parse_args()
    times = [[] for _ in SEARCHES]
    counts = [0] * len(SEARCHES)
    for _ in range(args.repeats):
        for i, s in enumerate(SEARCHES):
            counts[i], seconds = search(args.plait, s)
            times[i].append(seconds)
    for i, s in enumerate(SEARCHES):
        spread = ", ".join(f"{t:.1f}" for t in times[i])
        print(f"{' '.join(s):80s} {counts[i]:6d} candidates  median {statistics.median(times[i]):5.1f} s  ({spread})")
    worst = statistics.median(times[0])
    print(f"the issue's case: {worst:.1f} s (limit {args.limit:g} s)")
    return 0 if worst <= args.limit else 1


if __name__ == "__main__":
    sys.exit(main())
