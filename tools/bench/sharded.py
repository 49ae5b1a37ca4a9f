#!/usr/bin/env python3
"""Benchmark: plait's sharded data parallelism (fsdp, zero stage 3) against PyTorch's FSDP2.

Same model (nanoGPT's GPT-2), same per-rank batch, same ranks (2 by default, on this
machine's CPU, gloo), same steps, one thread per rank for all three:

  plait fsdp     plait run configs/quickstart.toml --set parallel.data=fsdp
  plait zero3    plait run configs/quickstart.toml --set parallel.data=zero --set zero.stage=3
  torch FSDP2    torch.distributed.fsdp.fully_shard on each transformer block, then on the
                 root; gloo, CPU tensors; nanoGPT's AdamW with quickstart.toml's settings
                 (lr 3e-3, 5 warm-up steps then cosine to 0.1*lr, betas 0.9/0.95, weight
                 decay 0.1 on 2-D weights, eps 1e-8, clip 1.0); loss = sum of token losses /
                 global token count, gradients summed across ranks (no FSDP averaging).

Each repeat runs the three in turn. Figures:

  tok/s       median step after warm-up (global tokens per step / step time), as ddp.py.
  alloc peak  the most bytes live in LibTorch's CPU allocator during a step, rank 0:
              plait: metrics.jsonl peak_mem_bytes (its allocator wrapper; max over the
              timed steps); torch: the same quantity rebuilt from torch.profiler's memory
              events (profile_memory=True) in a separate profiled pass after the timed
              one: model built and two steps run under the profiler, the peak of step 2.
  state       parameters + gradients + optimizer state held per rank (rank 0), bytes:
              plait: param_bytes + grad_bytes + optimizer_bytes; torch: the local shards.
  max RSS     the process's peak resident set (getrusage ru_maxrss), max over ranks:
              plait: wait4 on the launcher (its ranks are its children); torch: each rank
              at the end of its timed steps. Includes each runtime's libraries, the Python
              interpreter for torch, so it is only roughly comparable.

The ratios printed are plait/torch, per repeat, then the median over repeats.

  .venv/bin/python tools/bench/sharded.py                       # tiny and small, 5 repeats
  .venv/bin/python tools/bench/sharded.py --quick               # smoke test: 1 repeat, few steps
  .venv/bin/python tools/bench/sharded.py --models tiny --repeats 3 --json out.json
"""
import argparse
import gc
import json
import math
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

os.environ.setdefault("KINETO_LOG_LEVEL", "5")  # the profiler's "gpuGetDeviceCount failed" on CPU-only machines

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from torch.nn import functional as F  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python"))
from reference_models import GPT, nanogpt_adamw  # noqa: E402

# name: model dimensions (gpt2 family), batch per rank, steps (full, --quick) and warm-up steps (full, --quick).
# "small" is plait's tiny with wider, deeper layers and longer sequences (~3.3M parameters).
MODELS = {
    "tiny": dict(L=2, H=4, C=64, V=256, block=64, B=8, T=64, steps=(30, 8), warm=(5, 3)),
    "small": dict(L=4, H=4, C=256, V=256, block=128, B=8, T=128, steps=(10, 5), warm=(3, 2)),
}
# configs/quickstart.toml's [train] and the schema's AdamW defaults, for the torch side.
LR, WARMUP, MIN_LR_RATIO, WEIGHT_DECAY, BETAS, EPS, CLIP = 3e-3, 5, 0.1, 0.1, (0.9, 0.95), 1e-8, 1.0
PLAIT_VARIANTS = {
    "plait fsdp": ["--set", "parallel.data=fsdp"],
    "plait zero3": ["--set", "parallel.data=zero", "--set", "zero.stage=3"],
}
TORCH = "torch FSDP2"
SYSTEMS = [*PLAIT_VARIANTS, TORCH]
MIB = 1024 * 1024


def lr_at(step, steps):
    """plait's LrSchedule (nanoGPT's): linear warm-up, then cosine to MIN_LR_RATIO*LR at the last step."""
    it = step - 1
    if it < WARMUP:
        return LR * (it + 1) / (WARMUP + 1)
    decay = steps - 1 - WARMUP
    if decay <= 0:
        return LR
    coeff = 0.5 * (1.0 + math.cos(math.pi * (it - WARMUP) / decay))
    return LR * MIN_LR_RATIO + coeff * (LR - LR * MIN_LR_RATIO)


# ---- plait -----------------------------------------------------------------------------
def plait_run(plait, spec, ranks, steps, warm, extra, work):
    out = Path(work) / f"plait-{time.monotonic_ns()}"
    cmd = [plait, "run", str(ROOT / "configs" / "quickstart.toml"), "--out", str(out), "--steps", str(steps),
           "--set", "model.size=tiny", "--set", f"model.n_layer={spec['L']}", "--set", f"model.n_head={spec['H']}",
           "--set", f"model.n_embd={spec['C']}", "--set", f"model.vocab_size={spec['V']}",
           "--set", f"model.block_size={spec['block']}",
           "--set", f"data.micro_batch_size={spec['B']}", "--set", f"data.seq_len={spec['T']}",
           "--set", f"parallel.dp={ranks}", "--set", "train.threads=1", *extra]
    log = Path(work) / f"plait-{time.monotonic_ns()}.log"
    with open(log, "wb") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT)
        # wait4's rusage covers the launcher and the ranks it reaped: ru_maxrss is the largest of them.
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
        raise RuntimeError(f"plait exited {proc.returncode}: {' '.join(cmd)}\n{tail}")
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    timed = rows[warm:]
    last = rows[-1]
    return {
        "tokens_per_s": statistics.median(r["tokens_per_s"] for r in timed),
        "alloc_peak_bytes": max(r["peak_mem_bytes"] for r in timed),
        "state_bytes": last["param_bytes"] + last["grad_bytes"] + last["optimizer_bytes"],
        "max_rss_bytes": usage.ru_maxrss * 1024,
        "final_loss": last["loss"],
    }


# ---- torch FSDP2 -----------------------------------------------------------------------
def build_fsdp(spec, ranks):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import FSDPModule, fully_shard

    mesh = init_device_mesh("cpu", (ranks,))
    model = GPT(spec["V"], spec["block"], spec["L"], spec["H"], spec["C"])
    for block in model.transformer.h:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    for m in model.modules():
        if isinstance(m, FSDPModule):
            # The loss is already divided by the global token count: sum gradients, do not average;
            # plain SUM collectives (gloo has no PREMUL_SUM).
            m.set_gradient_divide_factor(1.0)
            m.set_force_sum_reduction_for_comms(True)
    params = list(model.parameters())
    opt = nanogpt_adamw(params, lr=LR, weight_decay=WEIGHT_DECAY, betas=BETAS, eps=EPS)
    return model, params, opt


def torch_step(model, params, opt, spec, ranks, step, steps, gen, record=None):
    B, T, V = spec["B"], spec["T"], spec["V"]
    for group in opt.param_groups:
        group["lr"] = lr_at(step, steps)
    buf = torch.randint(0, V, (B, T + 1), generator=gen)
    # Like plait's trainer: count the global batch's tokens, normalise the loss sum by them,
    # sum the loss across ranks for the log.
    tokens = torch.tensor([float(B * T)])
    dist.all_reduce(tokens)
    logits = model(buf[:, :-1])
    loss_sum = F.cross_entropy(logits.view(-1, V), buf[:, 1:].reshape(-1), reduction="sum")
    (loss_sum / tokens.item()).backward()
    if record is not None:
        record["grad_bytes"] = sum(local(p.grad).nbytes for p in params if p.grad is not None)
    torch.nn.utils.clip_grad_norm_(params, CLIP)
    opt.step()
    opt.zero_grad(set_to_none=True)
    total = loss_sum.detach().clone()
    dist.all_reduce(total)
    return total.item() / tokens.item()


def local(t):
    return t.to_local() if hasattr(t, "to_local") else t


def torch_rank(rank, ranks, spec, steps, warm, port, result):
    warnings.filterwarnings("ignore")
    try:
        torch.set_num_threads(1)
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=ranks)
        gen = torch.Generator().manual_seed(1337 + rank)
        torch.manual_seed(0)
        model, params, opt = build_fsdp(spec, ranks)
        rates, loss = [], float("nan")
        for step in range(1, steps + 1):
            dist.barrier()
            t0 = time.perf_counter()
            loss = torch_step(model, params, opt, spec, ranks, step, steps, gen)
            rates.append(ranks * spec["B"] * spec["T"] / (time.perf_counter() - t0))
        max_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        del model, params, opt
        gc.collect()

        # Memory pass: everything torch allocates from here on is seen by the profiler.
        record = {}
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
            model, params, opt = build_fsdp(spec, ranks)
            for step in (1, 2):
                dist.barrier()
                with torch.profiler.record_function(f"bench-step-{step}"):
                    torch_step(model, params, opt, spec, ranks, step, steps, gen, record if step == 2 else None)
        state = (sum(local(p).untyped_storage().nbytes() for p in params) + record.get("grad_bytes", 0)
                 + sum(local(v).nbytes for s in opt.state.values() for v in s.values() if torch.is_tensor(v)))
        events = prof.profiler.kineto_results.events()
        window = next(e for e in events if e.name() == "bench-step-2")
        start, end = window.start_ns(), window.start_ns() + window.duration_ns()
        live = peak = 0
        for e in sorted((e for e in events if e.name() == "[memory]"), key=lambda e: e.start_ns()):
            if e.start_ns() > end:
                break
            live += e.nbytes()
            if e.start_ns() >= start:
                peak = max(peak, live)
            else:
                peak = live  # live bytes as step 2 begins
        result.put({"rank": rank, "tokens_per_s": statistics.median(rates[warm:]), "max_rss_bytes": max_rss,
                    "alloc_peak_bytes": peak, "state_bytes": state, "final_loss": loss})
        dist.destroy_process_group()
    except BaseException as e:  # report, so the parent does not wait forever
        result.put({"rank": rank, "error": f"{type(e).__name__}: {e}"})
        raise


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torch_run(spec, ranks, steps, warm):
    ctx = mp.get_context("spawn")
    result = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=torch_rank, args=(r, ranks, spec, steps, warm, port, result)) for r in range(ranks)]
    # The ranks' c10 warnings are quiet: the profiler's "memory block of unknown size was allocated
    # before the profiling started" is expected (such blocks are simply not counted).
    saved = os.environ.get("TORCH_CPP_LOG_LEVEL")
    os.environ["TORCH_CPP_LOG_LEVEL"] = "ERROR"
    try:
        for p in procs:
            p.start()
    finally:
        if saved is None:
            del os.environ["TORCH_CPP_LOG_LEVEL"]
        else:
            os.environ["TORCH_CPP_LOG_LEVEL"] = saved
    got = {}
    try:
        while len(got) < ranks:
            try:
                item = result.get(timeout=5)
            except Exception:  # queue.Empty
                dead = [p for p in procs if p.exitcode not in (None, 0)]
                if dead:
                    raise RuntimeError(f"torch rank exited {dead[0].exitcode} without a result")
                continue
            if "error" in item:
                raise RuntimeError(f"torch rank {item['rank']}: {item['error']}")
            got[item["rank"]] = item
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.terminate()
    r0 = got[0]
    return {"tokens_per_s": r0["tokens_per_s"], "alloc_peak_bytes": r0["alloc_peak_bytes"],
            "state_bytes": r0["state_bytes"], "max_rss_bytes": max(g["max_rss_bytes"] for g in got.values()),
            "final_loss": r0["final_loss"]}


# ---- driver ----------------------------------------------------------------------------
METRICS = [("tokens_per_s", "tok/s", 1.0, "{:10.0f}"), ("alloc_peak_bytes", "alloc peak MiB", MIB, "{:14.2f}"),
           ("state_bytes", "state MiB", MIB, "{:10.2f}"), ("max_rss_bytes", "max RSS MiB", MIB, "{:11.1f}")]


def run_plait(args, spec, steps, warm, extra, tmp):
    try:
        return plait_run(args.plait, spec, args.ranks, steps, warm, extra, tmp)
    except RuntimeError as e:  # e.g. a plugin being rebuilt under us: one retry
        print(f"  plait failed, retrying in 30 s: {str(e).splitlines()[0]}", flush=True)
        time.sleep(30)
        return plait_run(args.plait, spec, args.ranks, steps, warm, extra, tmp)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--plait", default=str(ROOT / "build" / "bin" / "plait"))
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--steps", type=int, help="steps per run (default: per model)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="smoke test: 1 repeat, few steps")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    if args.quick:
        args.repeats = 1
    print(f"torch {torch.__version__}; {args.ranks} ranks on gloo (CPU), 1 thread each; {args.repeats} repeat(s)",
          flush=True)
    report = {"torch": torch.__version__, "ranks": args.ranks, "repeats": args.repeats, "quick": args.quick,
              "metrics": {"tokens_per_s": "median step after warm-up, global tokens / step time",
                          "alloc_peak_bytes": "max live bytes in LibTorch's CPU allocator during a step, rank 0 "
                                              "(plait: metrics peak_mem_bytes; torch: torch.profiler memory events)",
                          "state_bytes": "params + grads + optimizer state per rank, rank 0",
                          "max_rss_bytes": "process ru_maxrss, max over ranks (includes runtime libraries)"},
              "models": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            spec = MODELS[name]
            steps = args.steps or spec["steps"][1 if args.quick else 0]
            warm = min(spec["warm"][1 if args.quick else 0], steps - 1)
            print(f"{name}: gpt2 L={spec['L']} H={spec['H']} C={spec['C']} V={spec['V']}, B={spec['B']} per rank, "
                  f"T={spec['T']}, {steps} steps ({warm} warm-up)", flush=True)
            runs = []
            for r in range(args.repeats):
                run = {label: run_plait(args, spec, steps, warm, extra, tmp) for label, extra in PLAIT_VARIANTS.items()}
                run[TORCH] = torch_run(spec, args.ranks, steps, warm)
                runs.append(run)
                print(f"  repeat {r + 1}: " + "   ".join(f"{s} {run[s]['tokens_per_s']:.0f} tok/s "
                                                         f"{run[s]['alloc_peak_bytes'] / MIB:.1f} MiB" for s in SYSTEMS),
                      flush=True)
            med = {s: {k: statistics.median(run[s][k] for run in runs) for k, *_ in METRICS} for s in SYSTEMS}
            ratios = {s: {k: statistics.median(run[s][k] / run[TORCH][k] for run in runs) for k, *_ in METRICS}
                      for s in PLAIT_VARIANTS}
            report["models"][name] = {"spec": {**spec, "steps": steps, "warm": warm}, "runs": runs,
                                      "median": med, "ratio_vs_torch": ratios}
            print(f"  {'':22s}" + "".join(f"{h:>{len(fmt.format(0))}s} " for _, h, _, fmt in METRICS))
            for s in SYSTEMS:
                print(f"  {s:22s}" + "".join(fmt.format(med[s][k] / div) + " " for k, _, div, fmt in METRICS))
            for s in PLAIT_VARIANTS:
                print(f"  {s + ' / torch':22s}" + "".join(f"{ratios[s][k]:{len(fmt.format(0))}.3f} "
                                                         for k, _, _, fmt in METRICS))
            print(f"  (medians over {args.repeats} repeat(s); ratios are the median of per-repeat plait/torch)",
                  flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
