#!/usr/bin/env python3
"""plait checkpoints to and from Hugging Face transformers, for gpt2 and llama.

  * out: plait trains 3 steps, `plait export RUN --hf DIR` writes the checkpoint as a
    Hugging Face folder, `from_pretrained(DIR)` loads it, and its logits equal plait's own
    on those weights (a plait run started from the checkpoint through [model] init_from,
    step 1's logits dumped) within 1e-5 in float32; also exported in shards (model-*-of-*
    with model.safetensors.index.json), loaded the same.
  * in: transformers makes a model with random weights and `save_pretrained`s it; a plait
    run started from that folder through [model] init_from has step-1 logits equal to
    transformers' within 1e-5.
Exit status 0 when everything matches.
"""
import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file
import transformers

TOL = 1e-5
ROOT = Path(__file__).resolve().parents[2]


def plait_run(plait, out, family, steps, sets):
    args = [plait, "run", str(ROOT / "configs/quickstart.toml"), "--steps", str(steps), "--out", str(out),
            "--set", f"model.family={family}", "--set", "parallel.data=single", "--set", "parallel.dp=1",
            "--set", "train.dtype=float32", "--set", "data.seq_len=32", "--set", "data.micro_batch_size=4"]
    for s in sets:
        args += ["--set", s]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"plait run failed:\n{r.stdout}\n{r.stderr}")


def plait_logits(plait, work, family, init_from):
    """Inputs and step-1 logits of a plait run that starts from `init_from`."""
    out = work / f"{family}-from-{Path(init_from).name}"
    shutil.rmtree(out, ignore_errors=True)
    plait_run(plait, out, family, 1, [f"model.init_from={init_from}", "debug.dump_logits=true", "checkpoint.final=false"])
    dumped = load_file(str(out / "debug_logits.safetensors"))
    return dumped["inputs"], dumped["logits"]


def compare(what, hf_model, inputs, logits):
    hf_model.eval()
    with torch.no_grad():
        theirs = hf_model(inputs).logits.float()
    diff = (theirs - logits).abs().max().item()
    ok = diff <= TOL
    print(f"{'PASS' if ok else 'FAIL'} {what}: max |logits diff| = {diff:.3e} (tolerance {TOL})")
    return ok


def hf_config(family, dims):
    if family == "gpt2":
        return transformers.GPT2Config(vocab_size=dims["vocab_size"], n_positions=dims["block_size"],
                                       n_embd=dims["n_embd"], n_layer=dims["n_layer"], n_head=dims["n_head"],
                                       n_inner=dims["ffn_hidden"], activation_function="gelu", resid_pdrop=0.0,
                                       embd_pdrop=0.0, attn_pdrop=0.0, layer_norm_epsilon=dims["norm_eps"])
    return transformers.LlamaConfig(vocab_size=dims["vocab_size"], hidden_size=dims["n_embd"],
                                    intermediate_size=dims["ffn_hidden"], num_hidden_layers=dims["n_layer"],
                                    num_attention_heads=dims["n_head"], num_key_value_heads=dims["n_kv_head"],
                                    max_position_embeddings=dims["block_size"], rms_norm_eps=dims["norm_eps"],
                                    rope_theta=dims["rope_theta"], tie_word_embeddings=False)


def check_family(plait, work, family):
    ok = True
    run = work / f"{family}-trained"
    shutil.rmtree(run, ignore_errors=True)
    plait_run(plait, run, family, 3, [])
    inputs, logits = plait_logits(plait, work, family, run)
    for shard_mb in (None, "0.05"):
        hf = work / f"{family}-hf{'-sharded' if shard_mb else ''}"
        shutil.rmtree(hf, ignore_errors=True)
        cmd = [plait, "export", str(run), "--hf", str(hf)] + (["--shard-mb", shard_mb] if shard_mb else [])
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"plait export failed:\n{r.stdout}\n{r.stderr}")
        sharded = (hf / "model.safetensors.index.json").exists()
        if bool(shard_mb) != sharded:
            print(f"FAIL {family}: export with --shard-mb {shard_mb} wrote {'shards' if sharded else 'one file'}")
            ok = False
        model = transformers.AutoModelForCausalLM.from_pretrained(str(hf), torch_dtype=torch.float32)
        ok &= compare(f"{family}: plait export ({'shards' if sharded else 'one file'}) -> from_pretrained", model,
                      inputs, logits)
    # In: transformers' own random model through init_from.
    index = json.loads(next((run / "checkpoints").glob("step-3")).joinpath("index.json").read_text())
    torch.manual_seed(0)
    theirs = transformers.AutoModelForCausalLM.from_config(hf_config(family, index["state"]["model"]))
    saved = work / f"{family}-transformers"
    shutil.rmtree(saved, ignore_errors=True)
    theirs.save_pretrained(str(saved))
    inputs, logits = plait_logits(plait, work, family, saved)
    ok &= compare(f"{family}: transformers save_pretrained -> plait [model] init_from", theirs.float(), inputs, logits)
    return ok


def family_checks(doc, check):
    """The command line of a check per model family: --plait, --work, --family (repeatable;
    default both). Exit status 0 when `check(plait, work, family)` holds for every one."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plait", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--family", choices=["gpt2", "llama"], action="append")
    a = ap.parse_args()
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    ok = all([check(a.plait, work, f) for f in (a.family or ["gpt2", "llama"])])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(family_checks(__doc__, check_family))
