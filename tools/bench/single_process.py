#!/usr/bin/env python3
"""Benchmark: single-process training tokens/s of plait against PyTorch eager.

Same model (nanoGPT's GPT-2 in Python), same batch, same step (forward, token-mean
cross-entropy, backward, clip, AdamW), same threads. Each round runs plait and then
PyTorch; a round's figure is the median step of each after warm-up, and the reported
ratio is the median over rounds of plait/PyTorch.

  .venv/bin/python tools/bench/single_process.py            # tiny and small, 5 rounds
  .venv/bin/python tools/bench/single_process.py --models tiny --rounds 3
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python"))
from reference_models import GPT, eager_tokens_per_s  # noqa: E402

# name: (n_layer, n_head, n_embd, vocab, block, B, T, steps)
MODELS = {
    "tiny": (2, 4, 64, 256, 64, 8, 64, 40),
    "small": (6, 6, 384, 256, 256, 8, 256, 12),  # nanoGPT's shakespeare-char size, ~10.7M params
}
WARMUP = 3


def plait_round(plait, name, work):
    L, H, C, V, block, B, T, steps = MODELS[name]
    cfg = work / f"{name}.toml"
    cfg.write_text(f"""
[model]
size = "tiny"
n_layer = {L}
n_head = {H}
n_embd = {C}
vocab_size = {V}
block_size = {block}
[data]
source = "synthetic"
micro_batch_size = {B}
seq_len = {T}
[train]
steps = {steps}
lr = 1e-3
""")
    out = work / f"run-{name}-{time.monotonic_ns()}"
    subprocess.run([plait, "run", str(cfg), "--out", str(out)], check=True, capture_output=True)
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return statistics.median(r["tokens_per_s"] for r in rows[WARMUP:])


def torch_round(name):
    L, H, C, V, block, B, T, steps = MODELS[name]
    torch.manual_seed(0)
    model = GPT(vocab_size=V, block_size=block, n_layer=L, n_head=H, n_embd=C)
    return statistics.median(eager_tokens_per_s(model, V, B, T, steps)[WARMUP:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plait", default=str(ROOT / "build" / "bin" / "plait"))
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; rounds: {args.rounds}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            ratios, ours, theirs = [], [], []
            for r in range(args.rounds):
                p = plait_round(args.plait, name, Path(tmp))
                t = torch_round(name)
                ours.append(p)
                theirs.append(t)
                ratios.append(p / t)
                print(f"  {name} round {r + 1}: plait {p:10.0f} tok/s   pytorch {t:10.0f} tok/s   ratio {p / t:.3f}")
            print(f"{name}: plait {statistics.median(ours):.0f} tok/s, pytorch eager {statistics.median(theirs):.0f} tok/s, "
                  f"median ratio {statistics.median(ratios):.3f} over {args.rounds} rounds")


if __name__ == "__main__":
    main()
