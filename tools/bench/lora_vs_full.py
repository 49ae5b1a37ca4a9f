#!/usr/bin/env python3
"""LoRA against full fine-tuning on the same llama, side by side in one run: tokens per
second and memory per rank.

Each repeat runs configs/quickstart.toml with model.family = llama (2 DDP ranks) twice,
full fine-tuning and [parallel] adapter = "lora" (rank 8 on all seven linears of every
block), interleaved so both share the machine's noise. Per run: the median of tok/s over
the steps after the first --skip (metrics.jsonl), rank 0's peak memory
(peak_mem_bytes, everything the allocator held at its highest), and its model state
(param_bytes + grad_bytes + optimizer_bytes + frozen_param_bytes). Figures are medians
over --repeats. --size picks the llama (tiny: the quickstart's; 124m with --micro-batch 1
--seq-len 256 for a model whose state dominates).

  .venv/bin/python tools/bench/lora_vs_full.py --plait build/bin/plait --repeats 5
"""
import argparse
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGETS = '["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]'


def one_run(a, out, lora):
    shutil.rmtree(out, ignore_errors=True)
    sets = ["model.family=llama", f"model.size={a.size}", f"data.micro_batch_size={a.micro_batch}",
            f"data.seq_len={a.seq_len}", "checkpoint.final=false"]
    if lora:
        sets += ["parallel.adapter=lora", "lora.rank=8", f"lora.targets={TARGETS}"]
    args = [a.plait, "run", str(ROOT / "configs/quickstart.toml"), "--steps", str(a.steps), "--out", str(out)]
    for s in sets:
        args += ["--set", s]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"plait run failed:\n{r.stdout}\n{r.stderr}")
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    speed = statistics.median(r["tokens_per_s"] for r in records[a.skip:])
    last = records[-1]
    state = sum(last.get(k, 0) for k in ("param_bytes", "grad_bytes", "optimizer_bytes", "frozen_param_bytes"))
    return speed, max(r["peak_mem_bytes"] for r in records), state


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plait", required=True)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--skip", type=int, default=5)
    ap.add_argument("--size", default="tiny")
    ap.add_argument("--micro-batch", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=64)
    ap.add_argument("--dir", default="/tmp/lora_bench")
    a = ap.parse_args()
    results = {"full": [], "lora": []}
    for k in range(a.repeats):
        for name in ("full", "lora"):
            results[name].append(one_run(a, Path(a.dir) / f"{name}-{k}", name == "lora"))
    mib = 1024 * 1024
    print(f"llama {a.size}, 2 ddp ranks, B={a.micro_batch} T={a.seq_len}, {a.steps} steps, medians of {a.repeats}")
    print(f"{'':6} {'tok/s':>10} {'peak MiB':>10} {'state MiB':>10}")
    med = {}
    for name, runs in results.items():
        med[name] = [statistics.median(x[i] for x in runs) for i in range(3)]
        s, p, m = med[name]
        print(f"{name:6} {s:10.0f} {p / mib:10.2f} {m / mib:10.2f}")
    print(f"lora / full: tok/s {med['lora'][0] / med['full'][0]:.2f}x, peak memory {med['lora'][1] / med['full'][1]:.2f}x, "
          f"model state {med['lora'][2] / med['full'][2]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
