#!/usr/bin/env python3
"""Benchmark: [train] cache_freed_blocks on and off, side by side.

  tools/bench/freed_blocks.py [--plait build/bin/plait] [--steps 6] [--repeats 3] [--only CASE,...]

The same CPU runs with the memory a rank frees kept in its heap for reuse (the default)
and large blocks handed back to the kernel (`--set train.cache_freed_blocks=false`), in turn, each
repeat running every case both ways. Figures: the median step time after the first two
steps, the median over repeats, the ratio on/off; and the process tree's largest
resident set (wait4's ru_maxrss: the largest rank), which keeping raises by what the
heap holds beyond the peak in use. Run it on a quiet machine.
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QUICKSTART = os.path.join(ROOT, "configs", "quickstart.toml")
GPT2_124M = ["model.size=124m", "data.seq_len=128", "model.block_size=128", "data.micro_batch_size=4"]
CASES = {
    "124m zero3": GPT2_124M + ["parallel.data=zero", "zero.stage=3"],
    "124m fsdp": GPT2_124M + ["parallel.data=fsdp"],
    "124m ddp": GPT2_124M,
    "small tp2": ["model.n_embd=256", "model.n_layer=4", "data.seq_len=128", "model.block_size=128",
                  "parallel.data=none", "parallel.dp=1", "parallel.tp=2", "parallel.tensor=megatron"],
}


def one_run(args, sets, cache, out):
    shutil.rmtree(out, ignore_errors=True)
    flags = [f for s in sets + [f"train.cache_freed_blocks={'true' if cache else 'false'}", "checkpoint.final=false"]
             for f in ("--set", s)]
    proc = subprocess.Popen([args.plait, "run", QUICKSTART, "--steps", str(args.steps), "--out", out] + flags,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"error: the run into {out} failed:\n{proc.stderr.read()[-2000:]}")
    with open(os.path.join(out, "metrics.jsonl")) as f:
        steps = [json.loads(line)["step_ms"] for line in f if '"step_ms"' in line]
    return statistics.median(steps[2:]), usage.ru_maxrss * 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plait", default=os.path.join(ROOT, "build", "bin", "plait"))
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", help=f"comma-separated cases out of: {', '.join(CASES)}")
    args = ap.parse_args()
    names = args.only.split(",") if args.only else list(CASES)
    unknown = [name for name in names if name not in CASES]
    if unknown:
        sys.exit(f"error: --only {args.only}: no case named {', '.join(unknown)} (the cases: {', '.join(CASES)})")
    cases = {name: CASES[name] for name in names}
    work = tempfile.mkdtemp(prefix="freed-blocks-")
    results = {(name, cache): [] for name in cases for cache in (True, False)}
    try:
        for _ in range(args.repeats):
            for name, sets in cases.items():
                for cache in (True, False):
                    results[(name, cache)].append(one_run(args, sets, cache, os.path.join(work, "run")))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{'case':12s} {'kept ms':>9s} {'freed ms':>9s} {'ratio':>6s} {'kept RSS':>9s} {'freed RSS':>9s}")
    for name in cases:
        on = [r[0] for r in results[(name, True)]]
        off = [r[0] for r in results[(name, False)]]
        rss_on = max(r[1] for r in results[(name, True)]) / 2**20
        rss_off = max(r[1] for r in results[(name, False)]) / 2**20
        print(f"{name:12s} {statistics.median(on):9.1f} {statistics.median(off):9.1f} "
              f"{statistics.median(on) / statistics.median(off):6.3f} {rss_on:8.0f}M {rss_off:8.0f}M   "
              f"(kept {', '.join(f'{x:.0f}' for x in on)}; freed {', '.join(f'{x:.0f}' for x in off)})")


if __name__ == "__main__":
    main()
