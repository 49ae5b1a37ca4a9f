#!/usr/bin/env python3
"""plait's LoRA adapters handed back to Hugging Face, for gpt2 and llama.

transformers makes a small model with random weights and saves it; plait fine-tunes it
with [parallel] adapter = "lora" on every linear of the blocks ([model] init_from, 3
steps), then:
  * `plait export RUN --peft DIR`: PEFT's `PeftModel.from_pretrained(base, DIR)` gives
    logits within 1e-5 of plait's own on the trained adapters (a plait run started from
    the LoRA checkpoint through init_from, step 1's logits dumped);
  * `plait export RUN --hf DIR --merge`: transformers' `from_pretrained(DIR)` gives the
    same logits within 1e-5;
  * the adapters changed the model (the base's logits differ by more than 1e-3), and the
    checkpoint's frozen base equals the saved model's weights bit for bit.
Exit status 0 when everything holds.
"""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import peft
import torch
import transformers
from safetensors.torch import load_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hf_checkpoint import compare, family_checks, hf_config, plait_run  # noqa: E402

TARGETS = {
    "gpt2": ["c_attn", "c_proj", "c_fc"],
    "llama": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
}


def lora_sets(family):
    return ["parallel.adapter=lora", "lora.rank=4", "lora.alpha=8", "train.lr=1e-2",
            "lora.targets=[" + ", ".join(f'"{t}"' for t in TARGETS[family]) + "]"]


def run_plait(*args):
    r = subprocess.run(list(args), capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(args[:2])} failed:\n{r.stdout}\n{r.stderr}")
    return r.stdout


def logits_of(plait, work, family, name, init_from, sets):
    out = work / name
    shutil.rmtree(out, ignore_errors=True)
    plait_run(plait, out, family, 1, [f"model.init_from={init_from}", "debug.dump_logits=true", "checkpoint.final=false"]
              + sets)
    dumped = load_file(str(out / "debug_logits.safetensors"))
    return dumped["inputs"], dumped["logits"]


def base_equal(family, base, checkpoint):
    """The checkpoint's frozen parameters against the saved model, bit for bit."""
    theirs = load_file(str(base / "model.safetensors"))
    index = json.loads((checkpoint / "index.json").read_text())
    files = {}
    same = 0
    for key, entry in index["tensors"].items():
        name = key[len("param/"):]
        if not key.startswith("param/") or ".lora_" in key or name not in theirs:
            continue  # not a parameter, an adapter's, or a tied head (which transformers saves once)
        t = theirs[name]
        if family == "gpt2" and t.dim() == 2 and name.endswith(("c_attn.weight", "c_proj.weight", "c_fc.weight")):
            t = t.t()  # transformers' Conv1D stores [in, out]
        (part,) = entry["parts"]  # one rank wrote it whole
        stored = files.setdefault(part["file"], load_file(str(checkpoint / part["file"])))[part["key"]]
        if not torch.equal(stored.reshape(t.shape), t.contiguous()):
            print(f"FAIL {family}: frozen {name} changed in training")
            return False
        same += 1
    print(f"PASS {family}: {same} frozen tensors of the checkpoint equal the base model's bit for bit")
    return same > 0


def check_family(plait, work, family):
    torch.manual_seed(0)
    dims_run = work / f"{family}-dims"
    shutil.rmtree(dims_run, ignore_errors=True)
    plait_run(plait, dims_run, family, 1, [])
    dims = json.loads((dims_run / "checkpoints/step-1/index.json").read_text())["state"]["model"]
    base_model = transformers.AutoModelForCausalLM.from_config(hf_config(family, dims))
    base = work / f"{family}-base"
    shutil.rmtree(base, ignore_errors=True)
    base_model.save_pretrained(str(base), safe_serialization=True)
    run = work / f"{family}-lora"
    shutil.rmtree(run, ignore_errors=True)
    plait_run(plait, run, family, 3, [f"model.init_from={base}"] + lora_sets(family))
    ok = base_equal(family, base, run / "checkpoints/step-3")
    inputs, logits = logits_of(plait, work, family, f"{family}-lora-logits", run, lora_sets(family))
    _, base_logits = logits_of(plait, work, family, f"{family}-base-logits", base, [])
    moved = (logits - base_logits).abs().max().item()
    print(f"{'PASS' if moved > 1e-3 else 'FAIL'} {family}: the adapters moved the logits by {moved:.3e} (> 1e-3)")
    ok &= moved > 1e-3
    adapters, merged = work / f"{family}-peft", work / f"{family}-merged"
    for folder in (adapters, merged):
        shutil.rmtree(folder, ignore_errors=True)
    print(run_plait(plait, "export", str(run), "--peft", str(adapters)).strip())
    print(run_plait(plait, "export", str(run), "--hf", str(merged), "--merge").strip())
    fresh = transformers.AutoModelForCausalLM.from_pretrained(str(base), torch_dtype=torch.float32)
    with_adapters = peft.PeftModel.from_pretrained(fresh, str(adapters))
    ok &= compare(f"{family}: plait export --peft -> PeftModel.from_pretrained", with_adapters, inputs, logits)
    ok &= compare(f"{family}: plait export --hf --merge -> from_pretrained",
                  transformers.AutoModelForCausalLM.from_pretrained(str(merged), torch_dtype=torch.float32), inputs, logits)
    return ok


if __name__ == "__main__":
    sys.exit(family_checks(__doc__, check_family))
