#!/usr/bin/env python3
"""Benchmark: plait's pipeline schedules (gpipe, 1f1b, interleaved-1f1b) at equal
microbatches, and tensor parallel 2 against data parallel 2, on this machine's CPU.

Every variant trains the same GPT-2 (8 blocks of width 256, vocabulary 256, so that
the blocks dominate and the stages are balanced) with the same microbatch size and
microbatches per step, one thread per rank, each rank bound to its own core
([distributed] bind_cores: ranks sharing cores preempt each other, and one stage running
late holds up the others), gloo:

  1f1b         pp 2, [parallel] pipeline = "1f1b"
  gpipe        pp 2, "gpipe"
  interleaved  pp 2, "interleaved-1f1b", virtual_stages 2
  tp2          tp 2, [parallel] tensor = "megatron" (data = "single")
  tp2-sp       tp 2 with [megatron] sequence_parallel = true
  tp2-sp-drop  tp2-sp with [model] dropout = 0.1 (the cost of the hashed masks)
  dp2          dp 2, data = "ddp" (the same microbatches per rank, so twice the tokens a step)

Figures, medians over the steps after warm-up, then over repeats:

  tok/s       global tokens per step / step time (metrics.jsonl tokens_per_s)
  idle r      1 - pipeline_busy_us / pipeline_span_us of pipeline rank r: the share of
              the step's schedule (between two pipeline barriers) the rank spends outside
              forwards and backwards: waiting, sending, receiving
  formula     (p-1)/(m+p-1), interleaved (p-1)/(v*m+p-1)

  .venv/bin/python tools/bench/pipeline.py                    # 3 repeats, m = 4 and 8
  .venv/bin/python tools/bench/pipeline.py --quick            # smoke: 1 repeat, few steps
  .venv/bin/python tools/bench/pipeline.py --json out.json
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLAIT = ROOT / "build" / "bin" / "plait"
MODEL = ["model.n_layer=8", "model.n_embd=256", "model.n_head=4", "model.block_size=128",
         "data.seq_len=128", "data.micro_batch_size=4", "train.threads=1", "train.grad_clip=1.0",
         "distributed.bind_cores=true"]
VARIANTS = {
    "1f1b": ["parallel.pipeline=1f1b", "parallel.pp=2", "parallel.dp=1", "parallel.data=single"],
    "gpipe": ["parallel.pipeline=gpipe", "parallel.pp=2", "parallel.dp=1", "parallel.data=single"],
    "interleaved": ["parallel.pipeline=interleaved-1f1b", "parallel.pp=2", "parallel.dp=1", "parallel.data=single",
                    "interleaved-1f1b.virtual_stages=2"],
    "tp2": ["parallel.tensor=megatron", "parallel.tp=2", "parallel.dp=1", "parallel.data=single"],
    "tp2-sp": ["parallel.tensor=megatron", "parallel.tp=2", "parallel.dp=1", "parallel.data=single",
               "megatron.sequence_parallel=true"],
    "tp2-sp-drop": ["parallel.tensor=megatron", "parallel.tp=2", "parallel.dp=1", "parallel.data=single",
                    "megatron.sequence_parallel=true", "model.dropout=0.1"],
    "dp2": ["parallel.data=ddp", "parallel.dp=2"],
}


def formula(name, p, m, v=2):
    if name in ("1f1b", "gpipe"):
        return (p - 1) / (m + p - 1)
    if name == "interleaved":
        return (p - 1) / (v * m + p - 1)
    return None


def run(name, m, steps, warm, work):
    out = Path(work) / f"{name}-m{m}"
    sets = MODEL + VARIANTS[name] + [f"train.grad_accum={m}"]
    cmd = [str(PLAIT), "run", str(ROOT / "configs" / "quickstart.toml"), "--steps", str(steps), "--out", str(out)]
    for s in sets:
        cmd += ["--set", s]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()][warm:]
    tok = statistics.median(r["tokens_per_s"] for r in records)
    idle = []
    if name in ("1f1b", "gpipe", "interleaved"):
        ranks = len(records[0]["ranks"])
        for r in range(ranks):
            idle.append(statistics.median(1 - x["ranks"][r]["pipeline_busy_us"] / x["ranks"][r]["pipeline_span_us"]
                                          for x in records))
    return tok, idle


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--microbatches", type=int, nargs="+", default=[4, 8])
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--warm", type=int, default=3)
    ap.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.quick:
        args.repeats, args.steps, args.warm, args.microbatches = 1, 4, 1, [4]
    results = {}
    with tempfile.TemporaryDirectory() as work:
        for rep in range(args.repeats):
            for m in args.microbatches:
                for name in args.variants:
                    tok, idle = run(name, m, args.steps, args.warm, f"{work}/r{rep}")
                    results.setdefault((name, m), []).append((tok, idle))
                    print(f"repeat {rep} m {m} {name:12s} {tok:9.0f} tok/s idle {['%.3f' % x for x in idle]}",
                          file=sys.stderr)
    rows = []
    print(f"\n{'variant':12s} {'m':>3s} {'tok/s':>9s} {'idle 0':>7s} {'idle 1':>7s} {'formula':>8s}")
    for (name, m), runs in results.items():
        tok = statistics.median(r[0] for r in runs)
        idle = [statistics.median(r[1][k] for r in runs) for k in range(len(runs[0][1]))]
        f = formula(name, 2, m)
        row = {"variant": name, "microbatches": m, "tokens_per_s": tok, "idle": idle, "formula": f}
        rows.append(row)
        idle_txt = " ".join(f"{x:7.3f}" for x in idle) if idle else f"{'-':>7s} {'-':>7s}"
        print(f"{name:12s} {m:3d} {tok:9.0f} {idle_txt} {f if f is None else round(f, 3)!s:>8s}")
    def ratio(a, b, m):
        if (a, m) not in results or (b, m) not in results:
            return "-"
        return f"{statistics.median(r[0] for r in results[(a, m)]) / statistics.median(r[0] for r in results[(b, m)]):.2f}"

    for m in args.microbatches:
        print(f"m {m}: 1f1b/gpipe {ratio('1f1b', 'gpipe', m)}, interleaved/gpipe {ratio('interleaved', 'gpipe', m)}, "
              f"tp2/dp2 {ratio('tp2', 'dp2', m)}, tp2-sp/tp2 {ratio('tp2-sp', 'tp2', m)}, "
              f"tp2-sp with dropout/without {ratio('tp2-sp-drop', 'tp2-sp', m)}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
