#!/usr/bin/env python3
"""Checkpoint save and load speed: plait against PyTorch's torch.distributed.checkpoint
(DCP) and against the disk itself, side by side in one run on one disk.

  plait   gpt2 124m (124M parameters; fp32 weights and AdamW's two moments, 1.5 GB) on 2
          ranks under fsdp: one training step, then a checkpoint (`saved in` from rank
          0's log: from the save's start to its commit, every file fsynced); then a
          resume (`resumed ... in` from each rank's log, the slower rank). With
          [checkpoint] async, a save after step 2 of 3 and the time it held up training
          (`held up training`: setting it up, and the third step's update waiting for
          the copy of the state that the writer thread takes during its forward and
          backward).
  DCP     the same model (nanoGPT's GPT) under FSDP2 (fully_shard) on 2 gloo ranks, one
          AdamW step, then dcp.save({"model", "optim"}) (FileSystemWriter fsyncs its
          files) and dcp.load into the same state dicts.
  disk    dd of the same number of random bytes (from memory): write with conv=fsync, read
          back with the page cache dropped (when this machine lets us) or after the write.

Each figure is the median of --repeats runs, the repeats interleaved so that the three
share the machine's noise.

  .venv/bin/python tools/bench/checkpoint.py --plait build/bin/plait --repeats 5 --dir /tmp/ckbench
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests/python"))


def drop_caches():
    try:
        subprocess.run(["sync"], check=True)
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


# ---- plait --------------------------------------------------------------------------
PLAIT_SETS = ["model.size=124m", "data.seq_len=64", "data.micro_batch_size=1", "parallel.data=fsdp",
              "parallel.dp=2", "train.warmup_steps=0", "checkpoint.keep_last=1"]


def plait_run(plait, out, steps, sets):
    args = [plait, "run", str(ROOT / "configs/quickstart.toml"), "--steps", str(steps), "--out", str(out)]
    for s in PLAIT_SETS + sets:
        args += ["--set", s]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"plait run failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")


def plait_save_load(plait, work: Path, async_save: bool):
    saved = work / "plait-saved"
    shutil.rmtree(saved, ignore_errors=True)
    if async_save:
        plait_run(plait, saved, 3, ["checkpoint.async=true", "checkpoint.every=2", "checkpoint.final=false"])
    else:
        plait_run(plait, saved, 1, ["checkpoint.async=false"])
    log = (saved / "rank-0.log").read_text()
    save_s = float(re.search(r"saved in ([0-9.e+-]+) s \(", log).group(1))
    stall_s = float(re.search(r"held up training ([0-9.e+-]+) s", log).group(1)) if async_save else save_s
    ckpt = next((saved / "checkpoints").glob("step-*"))
    nbytes = folder_bytes(ckpt)
    load_s = None
    if not async_save:
        cached = not drop_caches()
        resumed = work / "plait-resumed"
        shutil.rmtree(resumed, ignore_errors=True)
        plait_run(plait, resumed, 2, ["checkpoint.final=false", f"checkpoint.resume_from={saved}"])
        load_s = max(float(re.search(r"resumed from .* in ([0-9.e+-]+) s", (resumed / f"rank-{r}.log").read_text()).group(1))
                     for r in (0, 1))
        shutil.rmtree(resumed, ignore_errors=True)
    return {"bytes": nbytes, "save_s": save_s, "stall_s": stall_s, "load_s": load_s}


# ---- DCP ----------------------------------------------------------------------------
DCP_WORKER = r'''
import os, sys, time, json, torch, torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.fsdp import fully_shard
sys.path.insert(0, sys.argv[2])
from reference_models import GPT
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
torch.set_num_threads(1)
model = GPT(50304, 1024, 12, 12, 768)
for block in model.transformer.h:
    fully_shard(block)
fully_shard(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randint(0, 50304, (1, 64))
model(x).float().mean().backward()
opt.step()
opt.zero_grad()
state = {"model": model.state_dict(), "optim": opt.state_dict()}
folder = sys.argv[1]
dist.barrier()
t0 = time.perf_counter()
dcp.save(state, checkpoint_id=folder)
dist.barrier()
save_s = time.perf_counter() - t0
if rank == 0 and sys.argv[3] == "drop":
    os.system("sync")
    try:
        open("/proc/sys/vm/drop_caches", "w").write("3\n")
    except OSError:
        pass
dist.barrier()
t0 = time.perf_counter()
dcp.load(state, checkpoint_id=folder)
dist.barrier()
load_s = time.perf_counter() - t0
if rank == 0:
    print(json.dumps({"save_s": save_s, "load_s": load_s}))
dist.destroy_process_group()
'''


def dcp_save_load(work: Path):
    folder = work / "dcp"
    shutil.rmtree(folder, ignore_errors=True)
    script = work / "dcp_worker.py"
    script.write_text(DCP_WORKER)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port", "29533",
                        str(script), str(folder), str(ROOT / "tests/python"), "drop"], capture_output=True, text=True,
                       env=env)
    if r.returncode != 0:
        sys.exit(f"DCP run failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    out = json.loads([line for line in r.stdout.splitlines() if line.startswith("{")][-1])
    out["bytes"] = folder_bytes(folder)
    shutil.rmtree(folder, ignore_errors=True)
    return out


# ---- the disk -----------------------------------------------------------------------
def random_source(nbytes: int) -> Path:
    """Random bytes in memory (/dev/shm): a virtual disk may store zeros for free."""
    src = Path("/dev/shm/plait-ckpt-bench.rand")
    if not src.exists() or src.stat().st_size < nbytes:
        with open(src, "wb") as f:
            for _ in range(0, nbytes, 64 << 20):
                f.write(os.urandom(64 << 20))
    return src


def disk(work: Path, nbytes: int):
    f = work / "dd.bin"
    count = max(1, nbytes // (16 << 20))
    src = random_source(count * (16 << 20))
    t0 = time.perf_counter()
    subprocess.run(["dd", f"if={src}", f"of={f}", "bs=16M", f"count={count}", "conv=fsync"], check=True,
                   capture_output=True)
    write_s = time.perf_counter() - t0
    cached = not drop_caches()
    t0 = time.perf_counter()
    subprocess.run(["dd", f"if={f}", "of=/dev/null", "bs=16M"], check=True, capture_output=True)
    read_s = time.perf_counter() - t0
    f.unlink()
    return {"bytes": count * (16 << 20), "write_s": write_s, "read_s": read_s, "read_from_cache": cached}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plait", default=str(ROOT / "build/bin/plait"))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--dir", default="/tmp/plait-ckpt-bench", help="a folder on the disk to measure")
    a = ap.parse_args()
    work = Path(a.dir)
    work.mkdir(parents=True, exist_ok=True)
    rows = {"plait": [], "plait async": [], "dcp": [], "disk": []}
    for k in range(a.repeats):
        rows["plait"].append(plait_save_load(a.plait, work, False))
        rows["plait async"].append(plait_save_load(a.plait, work, True))
        rows["dcp"].append(dcp_save_load(work))
        rows["disk"].append(disk(work, rows["plait"][-1]["bytes"]))
        print(f"round {k + 1}: " + json.dumps(rows), file=sys.stderr, flush=True)
    med = lambda name, key: statistics.median(r[key] for r in rows[name])  # noqa: E731
    mbps = lambda name, key: statistics.median(r["bytes"] / r[key] / 1e6 for r in rows[name])  # noqa: E731
    report = {
        "repeats": a.repeats,
        "page_cache_dropped_before_reads": not rows["disk"][0]["read_from_cache"],
        "plait": {"bytes": rows["plait"][0]["bytes"], "save_s": med("plait", "save_s"), "load_s": med("plait", "load_s"),
                  "save_MBps": mbps("plait", "save_s"), "load_MBps": mbps("plait", "load_s")},
        "plait_async": {"save_s": med("plait async", "save_s"), "stall_s": med("plait async", "stall_s")},
        "dcp": {"bytes": rows["dcp"][0]["bytes"], "save_s": med("dcp", "save_s"), "load_s": med("dcp", "load_s"),
                "save_MBps": mbps("dcp", "save_s"), "load_MBps": mbps("dcp", "load_s")},
        "disk": {"write_MBps": mbps("disk", "write_s"), "read_MBps": mbps("disk", "read_s")},
    }
    report["ratios"] = {
        "plait_save_vs_dcp": report["dcp"]["save_s"] / report["plait"]["save_s"],
        "plait_load_vs_dcp": report["dcp"]["load_s"] / report["plait"]["load_s"],
        "plait_save_of_disk": report["plait"]["save_MBps"] / report["disk"]["write_MBps"],
        "plait_load_of_disk": report["plait"]["load_MBps"] / report["disk"]["read_MBps"],
        "async_stall_of_sync_save": report["plait_async"]["stall_s"] / report["plait"]["save_s"],
    }
    print(json.dumps(report, indent=2))
    Path("/dev/shm/plait-ckpt-bench.rand").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
