#!/usr/bin/env python3
"""plait against PyTorch, on the same weights and tokens.

Runs `plait run` on gpt2 (or llama) tiny with init.safetensors and the step-1 logits
dumped, rebuilds the model in Python PyTorch from init.safetensors (gpt2: nanoGPT's own
model code; llama: Hugging Face's LlamaForCausalLM arithmetic), feeds the tokens llm.c's
sequential loader gives, and checks
  * the logits of step 1, microbatch 0 (float32, max abs diff <= 1e-5), and
  * the loss of each of 10 AdamW steps (<= 1e-5),
with torch.optim.AdamW, torch.nn.utils.clip_grad_norm_ and the same LR schedule.
Exit status 0 when everything matches.
"""
import argparse
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F
from safetensors.torch import load_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reference_models import GPT, Llama, nanogpt_adamw  # noqa: E402

B, T, STEPS = 4, 32, 10
LR, WARMUP, MIN_LR_RATIO, WD, BETAS, EPS, CLIP = 2e-3, 2, 0.1, 0.1, (0.9, 0.95), 1e-8, 1.0
TOL = 1e-5


# ---- the run ------------------------------------------------------------------------
def lr_at(step):
    """plait's schedule: nanoGPT's warmup, cosine to MIN_LR_RATIO*LR at the last step."""
    it = step - 1
    if it < WARMUP:
        return LR * (it + 1) / (WARMUP + 1)
    min_lr = LR * MIN_LR_RATIO
    ratio = (it - WARMUP) / (STEPS - 1 - WARMUP)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (LR - min_lr)


def llmc_batch(tokens, k):
    """llm.c's sequential loader: batch k reads B*T+1 tokens from k*B*T (wrapping)."""
    idx = (k * B * T + np.arange(B * T + 1)) % len(tokens)
    buf = torch.from_numpy(tokens[idx].astype(np.int64))
    return buf[:-1].view(B, T), buf[1:].view(B, T)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plait", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--family", default="gpt2", choices=["gpt2", "llama"])
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)

    work = Path(args.work) / args.family
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    tokens = np.random.default_rng(1234).integers(0, 256, size=20000, dtype=np.uint16)
    tokens.tofile(work / "tokens.bin")  # nanoGPT's raw uint16 format
    (work / "parity.toml").write_text(f"""
[model]
family = "{args.family}"
size = "tiny"
[data]
source = "tokens"
path = "tokens.bin"
order = "sequential"
micro_batch_size = {B}
seq_len = {T}
[train]
steps = {STEPS}
lr = {LR}
warmup_steps = {WARMUP}
min_lr_ratio = {MIN_LR_RATIO}
weight_decay = {WD}
beta1 = {BETAS[0]}
beta2 = {BETAS[1]}
eps = {EPS}
grad_clip = {CLIP}
dtype = "float32"
[checkpoint]
save_init = true
[debug]
dump_logits = true
""")
    run = work / "run"
    proc = subprocess.run([args.plait, "run", str(work / "parity.toml"), "--out", str(run)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        print(proc.stdout, proc.stderr)
        print("plait run failed")
        return 1
    plait_losses = [json.loads(line)["loss"] for line in (run / "metrics.jsonl").read_text().splitlines()]

    init = load_file(str(run / "init.safetensors"))
    if args.family == "gpt2":
        model = GPT(vocab_size=256, block_size=64, n_layer=2, n_head=4, n_embd=64)
        missing, unexpected = model.load_state_dict(init, strict=False)
        assert missing == ["lm_head.weight"] and not unexpected, (missing, unexpected)  # tied to wte
    else:
        model = Llama(V=256, block=64, L=2, H=4, KV=2, C=64, F_=176)
        model.load_state_dict(init, strict=True)

    failures = []
    dumped = load_file(str(run / "debug_logits.safetensors"))
    x0, y0 = llmc_batch(tokens, 0)
    if not (torch.equal(dumped["inputs"], x0) and torch.equal(dumped["targets"], y0)):
        failures.append("step-1 tokens differ from llm.c's sequential loader")
    with torch.no_grad():
        diff = (model(x0) - dumped["logits"]).abs().max().item()
    print(f"{args.family}: step 1 logits max abs diff {diff:.3e} (tolerance {TOL})")
    if not diff <= TOL:
        failures.append(f"logits differ by {diff}")

    opt = nanogpt_adamw(model.parameters(), lr=LR, weight_decay=WD, betas=BETAS, eps=EPS)
    print(f"{'step':>4} {'plait':>12} {'pytorch':>12} {'diff':>10}")
    for step in range(1, STEPS + 1):
        x, y = llmc_batch(tokens, step - 1)
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1), ignore_index=-1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        opt.step()
        d = abs(loss.item() - plait_losses[step - 1])
        print(f"{step:>4} {plait_losses[step - 1]:>12.7f} {loss.item():>12.7f} {d:>10.2e}")
        if not d <= TOL:
            failures.append(f"step {step} loss differs by {d}")
    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    print(f"{args.family}: logits and {STEPS} AdamW steps match PyTorch within {TOL}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
