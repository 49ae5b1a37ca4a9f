#!/usr/bin/env python3
"""Benchmark: what reporting a step costs as the job grows, and what timing its phases costs.

Metrics: the quickstart model under ddp at 2, 4, 8 and 16 ranks (one core shared by
several ranks on this VM; the model is tiny, so the report's own work shows), for
--steps steps, recording every step, once with every rank's records kept
([train] rank_metrics = "all") and once with the summary only ("summary"). Per run:
bytes of a metrics.jsonl record (median over steps), and the report's time per step:
time.metrics_ms (the figures sent to rank 0 and rank 0 writing the record), on rank 0
and the slowest rank (medians over the steps after the first two). A growth law is
fitted to each column against the number of ranks (bytes = a + b * ranks).

Timing cost, measured two ways: the same 2-rank run with [train] phase_timing on and
off, interleaved, --repeats times (median step_ms of each and their ratio; this VM's
noise is larger than the difference), and directly: the scopes a step times
(time.scopes) times what one scope costs (build/bin/plait-bench-phase-clock), over the
step time.

  .venv/bin/python tools/bench/metrics_scaling.py                 # 2 4 8 16 ranks, 30 steps
  .venv/bin/python tools/bench/metrics_scaling.py --ranks 2 4 --steps 20 --repeats 3
"""
import argparse
import json
import statistics
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(plait, out, ranks, steps, sets):
    cmd = [str(plait), "run", str(ROOT / "configs" / "quickstart.toml"), "--steps", str(steps), "--out", str(out),
           "--set", f"parallel.dp={ranks}", "--set", "data.micro_batch_size=2", "--set", "train.tensorboard=false",
           "--set", "checkpoint.final=false"]
    for s in sets:
        cmd += ["--set", s]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{r.stdout}\n{r.stderr}")
    lines = (out / "metrics.jsonl").read_text().splitlines()
    return [len(line.encode()) + 1 for line in lines], [json.loads(line) for line in lines]


def fit(xs, ys):
    """Least squares y = a + b x."""
    n, mx, my = len(xs), statistics.mean(xs), statistics.mean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    return my - b * mx, b


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plait", default=str(ROOT / "build" / "bin" / "plait"))
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4, 8, 16])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        rows = []
        for ranks in args.ranks:
            row = {"ranks": ranks}
            for kept in ("all", "summary"):
                sizes, records = run(args.plait, tmp / f"m{ranks}-{kept}", ranks, args.steps,
                                     [f"train.rank_metrics={kept}"])
                steady = records[2:]
                row[f"bytes_{kept}"] = statistics.median(sizes)
                row[f"metrics_ms_rank0_{kept}"] = statistics.median(r["time.metrics_ms"] for r in steady)
                row[f"metrics_ms_max_{kept}"] = statistics.median(
                    r["ranks_summary"]["time.metrics_ms"]["max"] for r in steady)
                row[f"metrics_ms_median_rank_{kept}"] = statistics.median(
                    r["ranks_summary"]["time.metrics_ms"]["median"] for r in steady)
                row[f"step_ms_{kept}"] = statistics.median(r["step_ms"] for r in steady)
            rows.append(row)
            print(json.dumps(row), flush=True)
        print("\nranks | record bytes (all ranks kept) | record bytes (summary) | report ms rank 0 (all / summary)"
              " | report ms median rank (summary) | step ms (summary)")
        for r in rows:
            print(f"{r['ranks']:5d} | {r['bytes_all']:29.0f} | {r['bytes_summary']:22.0f} | "
                  f"{r['metrics_ms_rank0_all']:8.3f} / {r['metrics_ms_rank0_summary']:7.3f} | "
                  f"{r['metrics_ms_median_rank_summary']:31.3f} | {r['step_ms_summary']:8.2f}")
        xs = [r["ranks"] for r in rows]
        if len(xs) > 1:
            for key in ("bytes_all", "bytes_summary", "metrics_ms_rank0_summary", "metrics_ms_median_rank_summary"):
                a, b = fit(xs, [r[key] for r in rows])
                print(f"{key}: {a:.1f} + {b:.3f} * ranks")

        on, off, scopes, step_ms = [], [], [], []
        for k in range(args.repeats):
            for timing in ((True, False) if k % 2 == 0 else (False, True)):  # neither always first
                _, records = run(args.plait, tmp / f"t{k}-{timing}", 2, args.steps,
                                 [f"train.phase_timing={'true' if timing else 'false'}"])
                (on if timing else off).append(statistics.median(r["step_ms"] for r in records[2:]))
                if timing:
                    for r in records[2:]:
                        scopes.extend(rank["time.scopes"] for rank in r["ranks"])
                        step_ms.append(r["step_ms"])
        print(f"\nphase timing on: median step {statistics.median(on):.3f} ms over {args.repeats} runs "
              f"({', '.join(f'{x:.2f}' for x in on)}); off: {statistics.median(off):.3f} ms "
              f"({', '.join(f'{x:.2f}' for x in off)}); median of the paired ratios on/off = "
              f"{statistics.median(a / b for a, b in zip(on, off)):.4f}")
        bench = Path(args.plait).parent / "plait-bench-phase-clock"
        cost = json.loads(subprocess.run([str(bench)], capture_output=True, text=True, check=True).stdout)
        per_step_us = statistics.median(scopes) * cost["ns_per_scope_timed"] / 1e3
        print(f"direct: {statistics.median(scopes):.0f} scopes per step (median over ranks and steps) x "
              f"{cost['ns_per_scope_timed']:.1f} ns per scope ({cost['ns_per_scope_untimed']:.1f} ns untimed) = "
              f"{per_step_us:.1f} us per step = {100 * per_step_us / 1e3 / statistics.median(step_ms):.3f}% of the "
              f"median step ({statistics.median(step_ms):.2f} ms)")


if __name__ == "__main__":
    main()
