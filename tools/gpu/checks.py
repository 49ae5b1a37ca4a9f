#!/usr/bin/env python3
"""The GPU checks of tools/gpu-check, run after its build: one line per check on stdout
(PASS, FAIL, or SKIP with the reason), every result (with its figures) in results.json in
the logs folder, under a header naming the date, the devices, the GPU count and torch.

  python tools/gpu/checks.py --plait build-gpu/bin/plait --logs build-gpu/gpu-check \
      [--results-copy docs/gpu-results]        # also writes DIR/DATE-DEVICE.json
  python tools/gpu/checks.py --plait build/bin/plait --logs /tmp/gpu-dry --cpu-dry-run
  python tools/gpu/checks.py --list            # every check and the GPUs it needs; runs nothing

On one GPU: each data plugin, offload, dropout, checkpointing and bf16 run on the GPU (NCCL
at world size 1) against the same run on the CPU, host reads, the SDPA kernel, device
memory against nvidia-smi and gpt2-124m throughput against PyTorch eager. On two GPUs or
more, also what users run on several: every data plugin at dp = every GPU over NCCL,
megatron tp 2 and a 1f1b pipeline pp 2 against the same ranks over gloo on the CPU, hybrid
sharding (4 GPUs), a killed rank and a hung rank. A check that needs more GPUs than the
machine has is a SKIP line, never dropped in silence.
"""
import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from collections import namedtuple
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
from fault_drill import named_culprit  # noqa: E402  (the drill's reading of the flight-record paragraph)

TINY = ["--set", "data.micro_batch_size=4", "--set", "data.seq_len=64"]
FLOAT64 = ["--set", "train.dtype=float64"]
CUDA = ["--set", "train.device=cuda"]
NCCL = ["--set", "parallel.comm=nccl"]
GLOO = ["--set", "parallel.comm=gloo"]
QUICKSTART = "configs/quickstart.toml"
DRY_RUN_GPUS = 2  # a cpu dry run chooses its checks as a machine of 2 GPUs would (2 gloo ranks)
# The launcher notices a dead rank in about 0.1 s, then stops the others (SIGTERM, SIGKILL
# after 3 s): 15 s from the strike to its exit leaves room for a rank stuck in a kernel.
KILL_BOUND_S = 15
# A hang is noticed within collective_timeout_s and about a second more, then stopped as above.
HANG_TIMEOUT_S, HANG_MARGIN_S = 5, 10


def ranks(n, dp=None):
    """n processes on this node; dp = n unless a pipeline or tensor axis takes some."""
    return ["--nproc-per-node", str(n), "--set", f"parallel.dp={n if dp is None else dp}"]


NCCL1 = ranks(1) + NCCL

# One check: its name, the GPUs it needs, what runs it (-> ok, detail, figures), and whether
# only a real GPU can make it (memory as nvidia-smi sees it, throughput): skipped in a dry run.
Check = namedtuple("Check", "name gpus fn real_gpu", defaults=(False,))


def needs(gpus):
    return f"needs {gpus} GPU{'s' if gpus > 1 else ''}"


class Checks:
    def __init__(self, plait, logs, header):
        self.plait, self.logs, self.header, self.results = plait, Path(logs), header, []

    def run(self, check):
        start = time.monotonic()
        try:
            ok, detail, figures = check.fn()
        except Exception as e:  # a check that cannot run fails with its reason
            ok, detail, figures = False, f"{type(e).__name__}: {e}", {}
        seconds = time.monotonic() - start
        self.results.append({"check": check.name, "gpus": check.gpus, "pass": bool(ok), "seconds": round(seconds, 1),
                             "detail": detail, "figures": figures})
        self.report("PASS" if ok else "FAIL", check.name, seconds, detail)

    def skip(self, check, reason):
        self.results.append({"check": check.name, "gpus": check.gpus, "skipped": reason})
        self.report("SKIP", check.name, 0.0, reason)

    def report(self, verdict, name, seconds, detail):
        print(f"{verdict} {name:<58} {seconds:6.1f}s  {detail}", flush=True)
        self.write(self.logs / "results.json")

    def summary(self):
        done = [r for r in self.results if "skipped" not in r]
        return {"passed": sum(r["pass"] for r in done), "failed": sum(not r["pass"] for r in done),
                "skipped": len(self.results) - len(done)}

    def write(self, path):
        path.write_text(json.dumps({**self.header, "summary": self.summary(), "checks": self.results}, indent=1) + "\n")

    def plait_process(self, tag, config, args, steps=5, verbose=False):
        """Runs plait to its end: (completed process, run folder, time.time() at its exit)."""
        out = self.logs / tag
        subprocess.run(["rm", "-rf", str(out)], check=True)
        cmd = [self.plait] + (["-v"] if verbose else []) + ["run", str(ROOT / config), "--steps", str(steps), "--out", str(out)] + args
        r = subprocess.run(cmd, capture_output=True, text=True)
        ended = time.time()
        (self.logs / f"{tag}.log").write_text(" ".join(cmd) + "\n" + r.stdout + r.stderr)
        return r, out, ended

    def plait_run(self, tag, config, args, steps=5, verbose=False):
        r, out, _ = self.plait_process(tag, config, args, steps, verbose)
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


def agree_multi(c, tag, shape, sets, n):
    """`shape` (ranks and mesh) over nccl on the GPUs against the same ranks over gloo on the
    CPU, float64 to 1e-9: the reductions differ in order only, so the losses agree that far."""
    inner = agree(c, tag, QUICKSTART, shape + NCCL + TINY + sets + FLOAT64, shape + GLOO + TINY + sets + FLOAT64, 1e-9)

    def check():
        ok, detail, figures = inner()
        return ok, f"{n} ranks: {detail}", {**figures, "ranks": n}
    return check


def bf16_twice(c):
    """What is bit-reproducible on the GPU in bf16: the same gpt2 run twice (deterministic
    algorithms with warn_only: an op without a deterministic kernel, as SDPA's backward may
    be, warns and runs anyway). Passes only when the losses are equal bit for bit; the
    figures keep the largest difference either way, for docs/running.md."""
    sets = ["--set", "train.dtype=bfloat16", "--set", "model.dropout=0.0"]
    first, _ = c.plait_run("bf16-twice-a", "configs/gpt2-tiny-single.toml", CUDA + sets, steps=5)
    second, _ = c.plait_run("bf16-twice-b", "configs/gpt2-tiny-single.toml", CUDA + sets, steps=5)
    a, b = [r["loss"] for r in first], [r["loss"] for r in second]
    worst = max(abs(x - y) for x, y in zip(a, b))
    return a == b, f"bit-equal {a == b}; largest loss difference {worst:.3e}", {"equal": a == b, "worst": worst}


def host_reads(c):
    """One read per step through the core's reader outside log steps, and no other wait for
    the device anywhere (debug.count_host_syncs: on CUDA its sync-debug mode's warnings,
    every stream, event or device synchronise and copy LibTorch waits out, on any thread,
    and a non-blocking upload from pageable memory)."""
    rows, _ = c.plait_run("host-reads", QUICKSTART, CUDA + NCCL1 + TINY + [
        "--set", "train.log_every=4", "--set", "debug.count_host_syncs=true"], steps=8)
    reads = [n for r in rows for n in r["host_reads_by_step"]]
    syncs = [n for r in rows for n in r.get("host_syncs_by_step", [])]
    between = [n for i, n in enumerate(reads, 1) if i % 4 != 0]
    ok = max(between) <= 1 and len(syncs) == len(reads) and max(syncs) == 0
    return ok, f"device-to-host reads per step {reads}; other waits for the device {syncs}", {
        "reads_by_step": reads, "host_syncs_by_step": syncs}


def resume_on_the_gpu(c):
    """zero-3 with offload and async saves (pinned host copies): 3 steps resumed for 3 more
    equal 6 straight, bit for bit; the GPU's checkpoint resumed on the CPU agrees to 1e-9."""
    strategy = TINY + FLOAT64 + ["--set", "parallel.data=zero", "--set", "zero.stage=3", "--set", "parallel.offload=cpu",
                                 "--set", "checkpoint.async=true", "--set", "checkpoint.every=3"]
    sets = NCCL1 + strategy
    straight, _ = c.plait_run("resume-straight", QUICKSTART, CUDA + sets, steps=6)
    _, first = c.plait_run("resume-first", QUICKSTART, CUDA + sets, steps=3)
    tail, _ = c.plait_run("resume-tail", QUICKSTART, CUDA + sets + ["--resume", str(first)], steps=6)
    on_cpu, _ = c.plait_run("resume-on-cpu", QUICKSTART, ranks(1) + strategy + ["--resume", str(first)], steps=6)
    exact = [r["loss"] for r in tail] == [r["loss"] for r in straight[3:]]
    worst = worst_relative(on_cpu, straight[3:])
    return exact and worst <= 1e-9, f"bit-exact {exact}; on the CPU worst relative {worst:.2e}", {"cpu_worst": worst}


def write_packed_token_file(path, documents=96, seed=0):
    """A plait token file (docs/data-format.md) of `documents` documents of 5 to 40 tokens
    below 256, with their starts recorded: what [data] packing puts into rows."""
    import random
    import struct
    rng = random.Random(seed)
    tokens, starts = [], []
    for _ in range(documents):
        starts.append(len(tokens))
        tokens += [rng.randrange(256) for _ in range(rng.randrange(5, 41))]
    header = b"PLAITTOK" + struct.pack("<IIqqIIq", 1, 2, len(tokens), len(starts), 2, 256, -1)
    header += b"tools/gpu/checks.py".ljust(128, b"\0")
    body = struct.pack(f"<{len(tokens)}H", *tokens)
    body += b"\0" * (-len(body) % 8) + struct.pack(f"<{len(starts)}q", *starts)
    Path(path).write_bytes(header.ljust(1024, b"\0") + body)


def packed_documents(c):
    """Packed rows in bf16: on a GPU each document attends to itself through flash
    attention's variable-length kernel (no [B,1,T,T] mask); the losses follow the CPU's
    block-mask path to 3e-2, and no rank fell back to the mask."""
    data = c.logs / "packed.bin"
    write_packed_token_file(data)
    sets = ["--set", "data.source=tokens", "--set", f"data.path={data}", "--set", "data.packing=true",
            "--set", "train.dtype=bfloat16"]
    ok, detail, figures = agree(c, "packed", "configs/gpt2-tiny-single.toml", sets, sets, 3e-2)()
    fell_back = "variable-length kernel is not usable" in (c.logs / "packed-gpu.log").read_text()
    return ok and not fell_back, f"{detail}; fell back to the mask: {fell_back}", {**figures, "fell_back": fell_back}


def sdpa_backend(c):
    _, out = c.plait_run("sdpa", "configs/gpt2-tiny-single.toml", CUDA + ["--set", "train.dtype=bfloat16"], steps=2,
                         verbose=True)
    line = next((l for l in (c.logs / "sdpa.log").read_text().splitlines() if "scaled_dot_product_attention" in l), "")
    kernel = line.split("runs its ")[1].split(" kernel")[0] if "runs its " in line else ""
    return kernel not in ("", "math", "none"), line.strip()[-120:], {"kernel": kernel}


def visible_gpu(index=0):
    """nvidia-smi's id of torch's cuda:<index>: CUDA_VISIBLE_DEVICES renumbers the GPUs torch
    sees, nvidia-smi does not."""
    visible = [v for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    return visible[index].strip() if visible else str(index)


def gpu_memory_used(gpu):
    """MiB in use on the whole GPU `gpu`, as nvidia-smi reads it. Per-process figures
    (--query-compute-apps) name host PIDs, which a container's PIDs never match."""
    r = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", gpu],
                       capture_output=True, text=True, check=True)
    return int(r.stdout.split()[0])


def baseline_memory(gpu, samples=5):
    """The GPU's memory in use before the run: the median of a few readings half a second
    long, so one reading caught while another process allocates does not set it."""
    readings = []
    for _ in range(samples):
        readings.append(gpu_memory_used(gpu))
        time.sleep(0.1)
    return statistics.median(readings)


def memory_against_nvidia_smi(c):
    """The allocator's reserved peak against what nvidia-smi sees the run add to the GPU: its
    peak during the run less its reading before (whatever else holds memory on the GPU)."""
    gpu = visible_gpu(0)
    baseline = baseline_memory(gpu)
    out = c.logs / "memory"
    subprocess.run(["rm", "-rf", str(out)], check=True)
    cmd = [c.plait, "run", str(ROOT / "configs/gpt2-tiny-single.toml"), "--steps", "30", "--out", str(out)] + CUDA + [
        "--set", "model.size=124m", "--set", "data.micro_batch_size=4", "--set", "data.seq_len=512",
        "--set", "train.dtype=bfloat16"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak, failed = [baseline], []

    def sample():
        while proc.poll() is None:
            try:
                peak[0] = max(peak[0], gpu_memory_used(gpu))
            except (subprocess.CalledProcessError, ValueError, IndexError) as e:
                failed.append(e)  # said after the run: a peak that stopped rising would mislead
                return
            time.sleep(0.2)
    sampler = threading.Thread(target=sample)
    sampler.start()
    log = proc.communicate()[0]
    sampler.join()
    (c.logs / "memory.log").write_text(log)
    if proc.returncode != 0:
        raise RuntimeError("plait failed: " + log.strip().splitlines()[-1][:200])
    if failed:
        raise RuntimeError(f"nvidia-smi could not be read during the run: {failed[0]}")
    rows = [json.loads(l) for l in (out / "metrics.jsonl").read_text().splitlines()]
    reserved = max(r["peak_reserved_mem_bytes"] for r in rows) / 2**20
    allocated = max(r["peak_mem_bytes"] for r in rows) / 2**20
    added = peak[0] - baseline
    # nvidia-smi adds the CUDA context (a few hundred MiB) and cuBLAS workspaces to what
    # the caching allocator reserved.
    ok = allocated <= reserved <= added <= reserved + 2048
    return ok, (f"allocated peak {allocated:.0f} MiB, reserved peak {reserved:.0f} MiB, nvidia-smi on GPU {gpu} "
                f"{peak[0]:.0f} MiB at peak less {baseline:.0f} MiB before the run = {added:.0f} MiB"), {
        "allocated_mib": allocated, "reserved_mib": reserved, "nvidia_smi_baseline_mib": baseline,
        "nvidia_smi_peak_mib": peak[0], "nvidia_smi_added_mib": added, "gpu": gpu}


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
    # The target: 5% faster than PyTorch eager on the same GPU.
    return ours / theirs >= 1.05, (f"plait {ours:.0f} tok/s (MFU {mfu:.1%} of 989 TFLOP/s), PyTorch eager {theirs:.0f} "
                                   f"tok/s, ratio {ours / theirs:.2f} (pass at >= 1.05)"), {
        "plait_tokens_per_s": ours, "eager_tokens_per_s": theirs, "mfu": mfu, "ratio": ours / theirs}


def faults_set(faults):
    """`[debug] faults` as tools/fault_drill.py sets it."""
    return ["--set", "debug.faults=[" + ", ".join(f'"{f}"' for f in faults) + "]"]


def injected_fault(c, tag, fault, extra=()):
    """2 ranks of ddp with `fault` injected, run to the launcher's exit: (exit code, its output,
    seconds from the strike (faults.jsonl) to that exit, the ranks its flight-record paragraph names)."""
    args = CUDA + ranks(2) + NCCL + TINY + list(extra) + faults_set([fault])
    r, out, ended = c.plait_process(tag, QUICKSTART, args, steps=5)
    strikes = [json.loads(l) for l in (out / "faults.jsonl").read_text().splitlines()] \
        if (out / "faults.jsonl").exists() else []
    if not strikes:
        raise RuntimeError(f"'{fault}' never struck (exit {r.returncode}); see {c.logs / tag}.log")
    text = r.stdout + r.stderr
    named, _ = named_culprit(text)
    return r.returncode, text, ended - strikes[0]["at_us"] / 1e6, named


def error_line(text):
    return next((l for l in text.splitlines() if l.startswith("error:")), "no error line")[:140]


def killed_rank(c):
    """Rank 1 SIGKILLed at step 3: the launcher names it and exits non-zero within KILL_BOUND_S."""
    rc, text, seconds, named = injected_fault(c, "fault-kill", "kill rank=1 step=3")
    says = "rank 1 (pid" in text and "killed by signal 9" in text
    ok = rc != 0 and says and named == [1] and seconds <= KILL_BOUND_S
    return ok, (f"exit {rc} {seconds:.1f} s after the kill (<= {KILL_BOUND_S} s); flight records name rank "
                f"{named or 'none'}; {error_line(text)}"), {"exit": rc, "seconds": seconds, "named": named}


def hung_rank(c):
    """Rank 1 hung at step 3: the others' collective times out and the launcher names rank 1
    within collective_timeout_s and a margin."""
    extra = ["--set", f"distributed.collective_timeout_s={HANG_TIMEOUT_S}"]
    rc, text, seconds, named = injected_fault(c, "fault-hang", "hang rank=1 step=3", extra)
    bound = HANG_TIMEOUT_S + HANG_MARGIN_S
    ok = rc != 0 and named == [1] and seconds <= bound
    return ok, (f"exit {rc} {seconds:.1f} s after the hang (<= {HANG_TIMEOUT_S} + {HANG_MARGIN_S} s); flight records "
                f"name rank {named or 'none'}; {error_line(text)}"), {"exit": rc, "seconds": seconds, "named": named}


DATA_PLUGINS = [("single", ["--set", "parallel.data=single"]), ("ddp", []),
                ("zero-1", ["--set", "parallel.data=zero", "--set", "zero.stage=1"]),
                ("zero-2", ["--set", "parallel.data=zero", "--set", "zero.stage=2"]),
                ("zero-3", ["--set", "parallel.data=zero", "--set", "zero.stage=3"]),
                ("fsdp", ["--set", "parallel.data=fsdp"])]


def one_gpu_checks(c):
    """What one GPU shows: every run on cuda:0 (NCCL at world size 1) against the CPU."""
    out = []
    # Every data plugin on the GPU, against the CPU, in float64 (the only dtype where the
    # two devices should agree to 1e-9) and float32 (1e-4).
    for name, sets in DATA_PLUGINS:
        cpu = ranks(1) + TINY + sets
        out.append(Check(f"{name} float64 on the GPU equals the CPU (1e-9)", 1,
                         agree(c, f"{name}-f64", QUICKSTART, NCCL1 + TINY + sets + FLOAT64, cpu + FLOAT64, 1e-9)))
        out.append(Check(f"{name} float32 on the GPU equals the CPU (1e-4)", 1,
                         agree(c, f"{name}-f32", QUICKSTART, NCCL1 + TINY + sets, cpu, 1e-4)))
    z3 = ["--set", "parallel.data=zero", "--set", "zero.stage=3", "--set", "parallel.offload=cpu"]
    for pin in ("true", "false"):
        for params in ("false", "true"):
            sets = z3 + ["--set", f"cpu.pin_memory={pin}", "--set", f"cpu.params={params}"] + TINY + FLOAT64
            out.append(Check(f"zero-3 offload (pinned {pin}, params {params}) equals the CPU (1e-9)", 1,
                             agree(c, f"offload-pin{pin}-params{params}", QUICKSTART, NCCL1 + sets, ranks(1) + sets,
                                   1e-9)))
    for mode, sets in [("dropout 0.1", ["--set", "model.dropout=0.1"]),
                       ("full checkpointing", ["--set", "train.activation_checkpointing=full"]),
                       ("selective checkpointing", ["--set", "train.activation_checkpointing=selective"])]:
        out.append(Check(f"{mode} on the GPU equals the CPU, float64 (1e-9)", 1,
                         agree(c, mode.replace(" ", "-"), "configs/gpt2-tiny-single.toml", sets + FLOAT64,
                               sets + FLOAT64, 1e-9)))
    bf16 = ["--set", "train.dtype=bfloat16"]
    out += [
        Check("bf16 gpt2 on the GPU follows the CPU (3e-2)", 1,
              agree(c, "bf16-gpt2", "configs/gpt2-tiny-single.toml", bf16, bf16, 3e-2)),
        Check("bf16 llama on the GPU follows the CPU (3e-2)", 1,
              agree(c, "bf16-llama", "configs/llama-tiny-bf16.toml", [], [], 3e-2)),
        Check("at most one device-to-host read per step outside log steps and no other host wait", 1,
              lambda: host_reads(c)),
        Check("checkpoints on the GPU resume exactly, and on the CPU", 1, lambda: resume_on_the_gpu(c)),
        Check("SDPA picks a fused kernel for bf16", 1, lambda: sdpa_backend(c)),
        Check("bf16 gpt2 run twice on the GPU gives the same losses bit for bit", 1, lambda: bf16_twice(c)),
        Check("packed documents in bf16 take the variable-length kernel and follow the CPU (3e-2)", 1,
              lambda: packed_documents(c)),
    ]
    return out


def multi_gpu_checks(c, n):
    """What users run on several GPUs, each against the same ranks over gloo on the CPU. `n`
    is the machine's GPU count (the names do not carry it: --list gives them without a GPU)."""
    out = [Check(f"{name} at dp = every GPU over nccl equals gloo on the CPU, float64 (1e-9)", 2,
                 agree_multi(c, f"dp-{name}", ranks(n), sets, n))
           for name, sets in DATA_PLUGINS if name != "single"]
    tp = ["--set", "parallel.tensor=megatron", "--set", "parallel.tp=2"]
    pp = ["--set", "parallel.pipeline=1f1b", "--set", "parallel.pp=2", "--set", "train.grad_accum=4"]
    hybrid_dp = max(4, n - n % 2)  # every GPU that pairs up; 2 replicas of shard groups of dp/2
    hybrid = ["--set", "parallel.data=fsdp", "--set", f"fsdp.shard_size={hybrid_dp // 2}"]
    out += [
        Check("megatron tp 2 over nccl equals gloo on the CPU, float64 (1e-9)", 2,
              agree_multi(c, "tp2-megatron", ranks(2, dp=1), tp, 2)),
        Check("1f1b pipeline pp 2 over nccl equals gloo on the CPU, float64 (1e-9)", 2,
              agree_multi(c, "pp2-1f1b", ranks(2, dp=1), pp, 2)),
        # zero has no hybrid option ([zero] has none); fsdp's shard_size is HSDP.
        Check("fsdp hybrid sharding (2 replicas of shard groups) over nccl equals gloo on the CPU, float64 (1e-9)", 4,
              agree_multi(c, "hsdp", ranks(hybrid_dp), hybrid, hybrid_dp)),
        Check(f"a killed rank is named and the job exits non-zero within {KILL_BOUND_S} s", 2, lambda: killed_rank(c)),
        Check(f"a hung rank is named within collective_timeout_s ({HANG_TIMEOUT_S} s) + {HANG_MARGIN_S} s", 2, lambda: hung_rank(c)),
    ]
    return out


def real_gpu_checks(c):
    return [Check("device memory: allocator peaks against nvidia-smi", 1, lambda: memory_against_nvidia_smi(c), True),
            Check("gpt2-124m bf16 throughput and MFU against PyTorch eager", 1, lambda: throughput_against_eager(c),
                  True)]


def all_checks(c, n):
    return one_gpu_checks(c) + multi_gpu_checks(c, n) + real_gpu_checks(c)


def skip_reason(check, gpus, dry_run):
    """Why `check` cannot run here, or None."""
    if check.real_gpu and dry_run:
        return "needs a real GPU (cpu dry run)"
    if check.gpus > gpus:
        return f"{needs(check.gpus)}, this machine has {gpus}" + (" (a cpu dry run counts 2)" if dry_run else "")
    return None


def gpu_count():
    """The GPUs torch sees (CUDA_VISIBLE_DEVICES applies), or nvidia-smi -L's without torch."""
    try:
        import torch
        return torch.cuda.device_count()
    except ImportError:
        r = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
        return sum(line.startswith("GPU ") for line in r.stdout.splitlines())


def device_names(gpus):
    """nvidia-smi's name of each GPU torch sees."""
    ids = ",".join(visible_gpu(i) for i in range(gpus))
    r = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i", ids],
                       capture_output=True, text=True)
    return [line.strip() for line in r.stdout.splitlines() if line.strip()]


def torch_version():
    try:
        import torch
        return torch.__version__
    except ImportError:
        return None


def make_header(gpus, dry_run):
    now = datetime.datetime.now(datetime.timezone.utc)
    devices = ["cpu dry run"] if dry_run else device_names(gpus)
    return {"date": now.strftime("%Y-%m-%d"), "started_utc": now.strftime("%Y-%m-%dT%H:%M:%SZ"), "devices": devices,
            "gpu_count": gpus, "torch": torch_version(), "command": " ".join(["tools/gpu/checks.py"] + sys.argv[1:])}


def copy_name(header):
    """DATE-DEVICE.json: the first device's name lowercase and dashed (nvidia-h200), with xN
    when the run had N of them."""
    slug = re.sub(r"[^a-z0-9]+", "-", header["devices"][0].lower()).strip("-") if header["devices"] else "unknown"
    if header["gpu_count"] > 1 and header["devices"] != ["cpu dry run"]:
        slug += f"-x{header['gpu_count']}"
    return f"{header['date']}-{slug}.json"


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plait")
    ap.add_argument("--logs")
    ap.add_argument("--cpu-dry-run", action="store_true",
                    help="run the harness on the CPU (gloo for nccl, 2 ranks for the multi-GPU checks), "
                         "without the checks only a real GPU can make")
    ap.add_argument("--list", action="store_true", help="print every check and the GPUs it needs; run nothing")
    ap.add_argument("--results-copy", metavar="DIR", help="also write the results to DIR/DATE-DEVICE.json")
    args = ap.parse_args()
    if not args.list and not (args.plait and args.logs):
        ap.error("--plait and --logs are required (except with --list)")
    return args


def list_checks():
    for check in all_checks(None, DRY_RUN_GPUS):
        print(f"{check.name}\t{needs(check.gpus)}" + (" (a real one: skipped in a cpu dry run)" if check.real_gpu else ""))


def use_the_cpu():
    """A dry run drops the CUDA and nccl arguments: every run is gloo on the CPU."""
    global CUDA, NCCL, NCCL1
    CUDA, NCCL = [], []
    NCCL1 = ranks(1)


def main():
    args = parse_args()
    if args.list:
        list_checks()
        return 0
    if args.cpu_dry_run:
        use_the_cpu()
        gpus = DRY_RUN_GPUS
    else:
        gpus = gpu_count()
        if gpus == 0:
            print("FAIL no CUDA device visible to torch (run with --cpu-dry-run to check the harness on the CPU)")
            return 1
    Path(args.logs).mkdir(parents=True, exist_ok=True)
    header = make_header(gpus, args.cpu_dry_run)
    copy = Path(args.results_copy) / copy_name(header) if args.results_copy else None
    header["results_copy"] = str(copy) if copy else None  # tools/gpu-check names it at its end
    c = Checks(args.plait, args.logs, header)
    for check in all_checks(c, gpus):
        reason = skip_reason(check, gpus, args.cpu_dry_run)
        if reason:
            c.skip(check, reason)
        else:
            c.run(check)
    s = c.summary()
    print(f"gpu-check: {s['passed']} passed, {s['failed']} failed, {s['skipped']} skipped on {gpus} "
          f"{'(dry-run) ' if args.cpu_dry_run else ''}GPU{'s' if gpus != 1 else ''}; results in {c.logs / 'results.json'}")
    if copy:
        copy.parent.mkdir(parents=True, exist_ok=True)
        c.write(copy)
        print(f"gpu-check: results copied to {copy} (commit it as it is)")
    return 1 if s["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
