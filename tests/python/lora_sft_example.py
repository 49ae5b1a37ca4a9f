#!/usr/bin/env python3
"""The README's fine-tuning example as given, in a scratch folder: tools/lora_sft_example.py
makes the base model, tokenizer and instruction pairs; tools/prepare_data.py the token
file; `plait run configs/lora-sft.toml` fine-tunes (its paths pointed at the scratch
folder); `plait export --peft` writes the adapters, which PEFT loads onto the base.
Holds: the run's counted tokens are the responses' alone (fewer than its tokens), the
loss on them falls by a third, and PEFT's model with the adapters scores a response of
the instructions better than the base does. Exit status 0 when all hold.
"""
import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import peft
import torch
import transformers

ROOT = Path(__file__).resolve().parents[2]


def run(*args):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(str(a) for a in args[:3])} failed:\n{r.stdout}\n{r.stderr}")
    return r.stdout


def response_loss(model, tokens, mask):
    with torch.no_grad():
        logits = model(tokens[None, :-1]).logits[0].float()
    losses = torch.nn.functional.cross_entropy(logits, tokens[1:], reduction="none")
    counted = mask[1:].bool()
    return (losses[counted].sum() / counted.sum()).item()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plait", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    work = Path(a.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    py = sys.executable
    run(py, ROOT / "tools/lora_sft_example.py", work / "example")
    run(py, ROOT / "tools/prepare_data.py", work / "example/instructions.jsonl", "--tokenizer", work / "example/tokenizer",
        "--out", work / "example/train.plait", "--quiet")
    run(a.plait, "run", ROOT / "configs/lora-sft.toml", "--out", work / "run", "--set",
        f"model.init_from={work / 'example/base'}", "--set", f"data.path={work / 'example/train.plait'}")
    run(a.plait, "export", work / "run", "--peft", work / "peft")
    records = [json.loads(line) for line in (work / "run/metrics.jsonl").read_text().splitlines()]
    first, last = records[0], records[-1]
    ok = True
    counted, tokens = first["counted_tokens"], first["tokens"]
    good = 0 < counted < tokens
    print(f"{'PASS' if good else 'FAIL'} step 1 counts {counted} of its {tokens} tokens (the responses)")
    ok &= good
    good = last["loss"] < first["loss"] * 2 / 3
    print(f"{'PASS' if good else 'FAIL'} the loss on the responses fell from {first['loss']:.3f} to {last['loss']:.3f}")
    ok &= good
    # One response of the data, scored by the base and by PEFT's model with plait's adapters.
    base = transformers.AutoModelForCausalLM.from_pretrained(str(work / "example/base"), torch_dtype=torch.float32)
    tuned = peft.PeftModel.from_pretrained(
        transformers.AutoModelForCausalLM.from_pretrained(str(work / "example/base"), torch_dtype=torch.float32),
        str(work / "peft"))
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(work / "example/tokenizer/tokenizer.json"))
    pair = json.loads((work / "example/instructions.jsonl").read_text().splitlines()[1])
    prompt, response = tok.encode(pair["prompt"]).ids, tok.encode(pair["response"]).ids
    ids = torch.tensor(prompt + response)
    mask = torch.tensor(np.r_[np.zeros(len(prompt)), np.ones(len(response))])
    before, after = response_loss(base, ids, mask), response_loss(tuned, ids, mask)
    good = after < before
    print(f"{'PASS' if good else 'FAIL'} PEFT with plait's adapters scores a response at {after:.3f} against the base's "
          f"{before:.3f}")
    ok &= good
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
