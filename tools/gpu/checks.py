#!/usr/bin/env python3
"""The GPU checks of tools/gpu-check, run after its build: one line per check on stdout,
every result (with its figures) in results.json in the logs folder.

  python tools/gpu/checks.py --plait build-gpu/bin/plait --logs build-gpu/gpu-check

Each check runs plait on the one GPU (NCCL at world size 1: multi-rank runs stay on the
CPU) and compares it with the same run on the CPU where the numbers must agree.
"""
import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--set", "data.micro_batch_size=4", "--set", "data.seq_len=64"]
FLOAT64 = ["--set", "train.dtype=float64"]
NCCL1 = ["--nproc-per-node", "1", "--set", "parallel.dp=1", "--set", "parallel.comm=nccl"]
CUDA = ["--set", "train.device=cuda"]


class Checks:
    def __init__(self, plait, logs):
        self.plait, self.logs, self.results = plait, Path(logs), []

    def run(self, name, fn):
        start = time.monotonic()
        try:
            ok, detail, figures = fn()
        except Exception as e:  # a check that cannot run fails with its reason
            ok, detail, figures = False, f"{type(e).__name__}: {e}", {}
        seconds = time.monotonic() - start
        self.results.append({"check": name, "pass": bool(ok), "seconds": round(seconds, 1), "detail": detail,
                             "figures": figures})
        print(f"{'PASS' if ok else 'FAIL'} {name:<58} {seconds:6.1f}s  {detail}", flush=True)
        (self.logs / "results.json").write_text(json.dumps(self.results, indent=1))

    def plait_run(self, tag, config, args, steps=5, verbose=False):
        out = self.logs / tag
        subprocess.run(["rm", "-rf", str(out)], check=True)
        cmd = [self.plait] + (["-v"] if verbose else []) + ["run", str(ROOT / config), "--steps", str(steps), "--out", str(out)] + args
        r = subprocess.run(cmd, capture_output=True, text=True)
        (self.logs / f"{tag}.log").write_text(" ".join(cmd) + "\n" + r.stdout + r.stderr)
        if r.returncode != 0:
            raise RuntimeError(f"plait exited {r.returncode}: " + (r.stdout + r.stderr).strip().splitlines()[-1][:200])
        return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()], out


def worst_relative(a, b):
    return max(abs(x["loss"] - y["loss"]) / abs(y["loss"]) for x, y in zip(a, b))


def agree(c, tag, config, gpu_args, cpu_args, tolerance, steps=5):
    def check():
        gpu, _ = c.plait_run(tag + "-gpu", config, CUDA + gpu_args, steps)
        cpu, _ = c.plait_run(tag + "-cpu", config, cpu_args, steps)
        worst = worst_relative(gpu, cpu)
        ok = len(gpu) == len(cpu) == steps and worst <= tolerance
        return ok, f"worst relative loss difference {worst:.2e} (<= {tolerance:g})", {"worst": worst}
    return check


def host_reads(c):
    rows, _ = c.plait_run("host-reads", "configs/quickstart.toml",
                          CUDA + NCCL1 + TINY + ["--set", "train.log_every=4"], steps=8)
    reads = [n for r in rows for n in r["host_reads_by_step"]]
    between = [n for i, n in enumerate(reads, 1) if i % 4 != 0]
    return max(between) <= 1, f"device-to-host reads per step {reads}", {"reads_by_step": reads}


def resume_on_the_gpu(c):
    """zero-3 with offload and async saves (pinned host copies): 3 steps resumed for 3 more
    equal 6 straight, bit for bit; the GPU's checkpoint resumed on the CPU agrees to 1e-9."""
    strategy = TINY + FLOAT64 + ["--set", "parallel.data=zero", "--set", "zero.stage=3", "--set", "parallel.offload=cpu",
                                 "--set", "checkpoint.async=true", "--set", "checkpoint.every=3"]
    sets = NCCL1 + strategy
    q = "configs/quickstart.toml"
    straight, _ = c.plait_run("resume-straight", q, CUDA + sets, steps=6)
    _, first = c.plait_run("resume-first", q, CUDA + sets, steps=3)
    tail, _ = c.plait_run("resume-tail", q, CUDA + sets + ["--resume", str(first)], steps=6)
    cpu = ["--nproc-per-node", "1", "--set", "parallel.dp=1"] + strategy
    on_cpu, _ = c.plait_run("resume-on-cpu", q, cpu + ["--resume", str(first)], steps=6)
    exact = [r["loss"] for r in tail] == [r["loss"] for r in straight[3:]]
    worst = worst_relative(on_cpu, straight[3:])
    return exact and worst <= 1e-9, f"bit-exact {exact}; on the CPU worst relative {worst:.2e}", {"cpu_worst": worst}


def sdpa_backend(c):
    _, out = c.plait_run("sdpa", "configs/gpt2-tiny-single.toml", CUDA + ["--set", "train.dtype=bfloat16"], steps=2,
                            verbose=True)
    line = next((l for l in (c.logs / "sdpa.log").read_text().splitlines() if "scaled_dot_product_attention" in l), "")
    kernel = line.split("runs its ")[1].split(" kernel")[0] if "runs its " in line else ""
    return kernel not in ("", "math", "none"), line.strip()[-120:], {"kernel": kernel}


def gpu_memory_of(pid):
    """MiB nvidia-smi says process `pid` uses (0 when it is not listed)."""
    r = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                       capture_output=True, text=True)
    for line in r.stdout.splitlines():
        p, mib = [x.strip() for x in line.split(",")]
        if p == str(pid):
            return int(mib)
    return 0


def memory_against_nvidia_smi(c):
    out = c.logs / "memory"
    subprocess.run(["rm", "-rf", str(out)], check=True)
    cmd = [c.plait, "run", str(ROOT / "configs/gpt2-tiny-single.toml"), "--steps", "30", "--out", str(out)] + CUDA + [
        "--set", "model.size=124m", "--set", "data.micro_batch_size=4", "--set", "data.seq_len=512",
        "--set", "train.dtype=bfloat16"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = [0]

    def sample():
        while proc.poll() is None:
            seen[0] = max(seen[0], gpu_memory_of(proc.pid))
            time.sleep(0.2)
    sampler = threading.Thread(target=sample)
    sampler.start()
    log = proc.communicate()[0]
    sampler.join()
    (c.logs / "memory.log").write_text(log)
    if proc.returncode != 0:
        raise RuntimeError("plait failed: " + log.strip().splitlines()[-1][:200])
    rows = [json.loads(l) for l in (out / "metrics.jsonl").read_text().splitlines()]
    reserved = max(r["peak_reserved_mem_bytes"] for r in rows) / 2**20
    allocated = max(r["peak_mem_bytes"] for r in rows) / 2**20
    # nvidia-smi adds the CUDA context (a few hundred MiB) and cuBLAS workspaces to what
    # the caching allocator reserved.
    ok = allocated <= reserved <= seen[0] <= reserved + 2048
    return ok, f"allocated peak {allocated:.0f} MiB, reserved peak {reserved:.0f} MiB, nvidia-smi {seen[0]} MiB", {
        "allocated_mib": allocated, "reserved_mib": reserved, "nvidia_smi_mib": seen[0]}


def throughput_against_eager(c):
    import torch
    sys.path.insert(0, str(ROOT / "tests" / "python"))
    from reference_models import GPT, eager_tokens_per_s
    B, T, steps = 8, 1024, 20
    rows, _ = c.plait_run("gpt2-124m", "configs/gpt2-tiny-single.toml", CUDA + [
        "--set", "model.size=124m", "--set", f"data.micro_batch_size={B}", "--set", f"data.seq_len={T}",
        "--set", "train.dtype=bfloat16", "--set", "train.peak_flops=989e12"], steps=steps)
    ours = statistics.median(r["tokens_per_s"] for r in rows[5:])
    mfu = statistics.median(r["mfu"] for r in rows[5:])
    torch.manual_seed(0)
    model = GPT(vocab_size=50304, block_size=T, n_layer=12, n_head=12, n_embd=768).cuda()
    rates = eager_tokens_per_s(model, 50304, B, T, steps, device="cuda", autocast_dtype=torch.bfloat16)
    theirs = statistics.median(rates[5:])
    return ours > 0, (f"plait {ours:.0f} tok/s (MFU {mfu:.1%} of 989 TFLOP/s), PyTorch eager {theirs:.0f} tok/s, "
                      f"ratio {ours / theirs:.2f}"), {"plait_tokens_per_s": ours, "eager_tokens_per_s": theirs,
                                                    "mfu": mfu, "ratio": ours / theirs}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plait", required=True)
    ap.add_argument("--logs", required=True)
    ap.add_argument("--cpu-dry-run", action="store_true",
                    help="run the harness on the CPU (gloo for nccl), without the checks only a GPU can make")
    args = ap.parse_args()
    global CUDA, NCCL1
    if args.cpu_dry_run:
        CUDA, NCCL1 = [], ["--nproc-per-node", "1", "--set", "parallel.dp=1"]
    c = Checks(args.plait, args.logs)
    q = "configs/quickstart.toml"
    # Every data plugin on the GPU, against the CPU, in float64 (the only dtype where the
    # two devices should agree to 1e-9) and float32 (1e-4).
    for name, sets in [("single", ["--set", "parallel.data=single"]), ("ddp", []),
                       ("zero-1", ["--set", "parallel.data=zero", "--set", "zero.stage=1"]),
                       ("zero-2", ["--set", "parallel.data=zero", "--set", "zero.stage=2"]),
                       ("zero-3", ["--set", "parallel.data=zero", "--set", "zero.stage=3"]),
                       ("fsdp", ["--set", "parallel.data=fsdp"])]:
        cpu = ["--nproc-per-node", "1", "--set", "parallel.dp=1"] + TINY + sets
        c.run(f"{name} float64 on the GPU equals the CPU (1e-9)",
              agree(c, f"{name}-f64", q, NCCL1 + TINY + sets + FLOAT64, cpu + FLOAT64, 1e-9))
        c.run(f"{name} float32 on the GPU equals the CPU (1e-4)", agree(c, f"{name}-f32", q, NCCL1 + TINY + sets, cpu, 1e-4))
    z3 = ["--set", "parallel.data=zero", "--set", "zero.stage=3", "--set", "parallel.offload=cpu"]
    for pin in ("true", "false"):
        for params in ("false", "true"):
            sets = z3 + ["--set", f"cpu.pin_memory={pin}", "--set", f"cpu.params={params}"]
            c.run(f"zero-3 offload (pinned {pin}, params {params}) equals the CPU (1e-9)",
                  agree(c, f"offload-pin{pin}-params{params}", q, NCCL1 + TINY + sets + FLOAT64,
                        ["--nproc-per-node", "1", "--set", "parallel.dp=1"] + TINY + sets + FLOAT64, 1e-9))
    for mode, sets in [("dropout 0.1", ["--set", "model.dropout=0.1"]),
                       ("full checkpointing", ["--set", "train.activation_checkpointing=full"]),
                       ("selective checkpointing", ["--set", "train.activation_checkpointing=selective"])]:
        c.run(f"{mode} on the GPU equals the CPU, float64 (1e-9)",
              agree(c, mode.replace(" ", "-"), "configs/gpt2-tiny-single.toml", sets + FLOAT64, sets + FLOAT64, 1e-9))
    c.run("bf16 gpt2 on the GPU follows the CPU (3e-2)",
          agree(c, "bf16-gpt2", "configs/gpt2-tiny-single.toml", ["--set", "train.dtype=bfloat16"],
                ["--set", "train.dtype=bfloat16"], 3e-2))
    c.run("bf16 llama on the GPU follows the CPU (3e-2)",
          agree(c, "bf16-llama", "configs/llama-tiny-bf16.toml", [], [], 3e-2))
    c.run("at most one device-to-host read per step outside log steps", lambda: host_reads(c))
    c.run("checkpoints on the GPU resume exactly, and on the CPU", lambda: resume_on_the_gpu(c))
    c.run("SDPA picks a fused kernel for bf16", lambda: sdpa_backend(c))
    if not args.cpu_dry_run:
        c.run("device memory: allocator peaks against nvidia-smi", lambda: memory_against_nvidia_smi(c))
        c.run("gpt2-124m bf16 throughput and MFU against PyTorch eager", lambda: throughput_against_eager(c))
    failed = sum(not r["pass"] for r in c.results)
    print(f"gpu-check: {len(c.results) - failed} passed, {failed} failed; results in {c.logs / 'results.json'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
