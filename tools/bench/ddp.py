#!/usr/bin/env python3
"""Benchmark: tokens/s of plait's DDP against PyTorch's DistributedDataParallel on gloo.

Same model (nanoGPT's GPT-2), same per-rank batch, same ranks (2, on this machine's CPU),
one thread per rank for both. Each round runs plait then PyTorch; a round's figure is
the median step after warm-up; the ratio reported is the median over rounds. Then the
effect of plait's bucket size (and of overlapping the all-reduce with backward).

  .venv/bin/python tools/bench/ddp.py                      # tiny and 124m, 5 rounds, buckets
  .venv/bin/python tools/bench/ddp.py --models tiny --rounds 3 --no-buckets
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn import functional as F

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python"))
from reference_models import GPT, nanogpt_adamw  # noqa: E402

# name: (size, B per rank, T, steps, warm-up steps)
MODELS = {"tiny": ("tiny", 8, 64, 30, 5), "124m": ("124m", 1, 128, 6, 2)}
RANKS = 2
DIMS = {"tiny": (2, 4, 64, 256, 64), "124m": (12, 12, 768, 50304, 1024)}  # L, H, C, V, block


def plait_round(plait, name, work, extra=()):
    size, B, T, steps, warm = MODELS[name]
    out = Path(work) / f"plait-{name}-{time.monotonic_ns()}"
    cmd = [plait, "run", str(ROOT / "configs" / "quickstart.toml"), "--out", str(out), "--steps", str(steps),
           "--set", f"model.size={size}", "--set", f"data.micro_batch_size={B}", "--set", f"data.seq_len={T}",
           "--set", "parallel.data=ddp", "--set", f"parallel.dp={RANKS}", "--set", "train.threads=1", *extra]
    subprocess.run(cmd, check=True, capture_output=True)
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return statistics.median(r["tokens_per_s"] for r in rows[warm:])


def torch_rank(rank, name, port, result):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=RANKS)
    size, B, T, steps, warm = MODELS[name]
    L, H, C, V, block = DIMS[name]
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(GPT(V, block, L, H, C), bucket_cap_mb=25)
    params = list(model.parameters())
    opt = nanogpt_adamw(params, lr=1e-3)
    rates = []
    for _ in range(steps):
        dist.barrier()
        t0 = time.perf_counter()
        buf = torch.randint(0, V, (B, T + 1))
        logits = model(buf[:, :-1])
        loss = F.cross_entropy(logits.view(-1, V), buf[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss.item()
        rates.append(RANKS * B * T / (time.perf_counter() - t0))
    if rank == 0:
        result.put(statistics.median(rates[warm:]))
    dist.destroy_process_group()


def torch_round(name):
    ctx = mp.get_context("spawn")
    result = ctx.Queue()
    port = 20000 + os.getpid() % 20000
    procs = [ctx.Process(target=torch_rank, args=(r, name, port, result)) for r in range(RANKS)]
    for p in procs:
        p.start()
    value = result.get()
    for p in procs:
        p.join()
    return value


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plait", default=str(ROOT / "build" / "bin" / "plait"))
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-buckets", action="store_true")
    args = ap.parse_args()
    print(f"torch {torch.__version__}; {RANKS} ranks on gloo, 1 thread each; {args.rounds} rounds")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            ratios, ours, theirs = [], [], []
            for r in range(args.rounds):
                p = plait_round(args.plait, name, tmp)
                t = torch_round(name)
                ours.append(p)
                theirs.append(t)
                ratios.append(p / t)
                print(f"  {name} round {r + 1}: plait ddp {p:9.0f} tok/s   torch DDP {t:9.0f} tok/s   ratio {p / t:.3f}",
                      flush=True)
            print(f"{name}: plait ddp {statistics.median(ours):.0f} tok/s, torch DDP {statistics.median(theirs):.0f} "
                  f"tok/s, median ratio {statistics.median(ratios):.3f} over {args.rounds} rounds", flush=True)
        if not args.no_buckets:
            name = "124m" if "124m" in args.models else args.models[0]
            print(f"bucket size ({name}, plait ddp, median of {args.rounds} rounds):")
            variants = [("bucket 1 MiB", ["--set", "ddp.bucket_cap_mb=1"]),
                        ("bucket 25 MiB", ["--set", "ddp.bucket_cap_mb=25"]),
                        ("bucket 200 MiB (one bucket)", ["--set", "ddp.bucket_cap_mb=200"]),
                        ("bucket 25 MiB, no overlap", ["--set", "ddp.bucket_cap_mb=25", "--set", "ddp.overlap=false"])]
            results = {label: [] for label, _ in variants}
            for _ in range(args.rounds):
                for label, extra in variants:
                    results[label].append(plait_round(args.plait, name, tmp, extra))
            for label, _ in variants:
                print(f"  {label:30s} {statistics.median(results[label]):9.0f} tok/s", flush=True)


if __name__ == "__main__":
    main()
