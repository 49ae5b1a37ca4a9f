"""torchrun's own restarts (--max-restarts) with plait's resume = "auto": a rank of a
2-rank ddp job started by the real torchrun (torch.distributed.run, its agent hosting the
store) is killed at step 6; torchrun starts both ranks again, they resume from the run's
newest checkpoint (step 4) in the same run folder, and the job ends with the same weights,
bit for bit, and the same losses as a plait run that was never interrupted. (Not at step 5:
rank 1 can reach step 5 while rank 0 still commits step 4, and torchrun stops rank 0 the
moment rank 1 dies; rank 1 reaches step 6 only after step 5's collectives, which rank 0
joins once the commit is done.)
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r.stdout + r.stderr


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def losses(run_dir):
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        return [(r["step"], r["loss"]) for r in map(json.loads, f)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plait", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    config = os.path.join(os.path.dirname(__file__), "..", "..", "configs", "quickstart.toml")
    common = ["run", config, "--steps", "8", "--set", "checkpoint.every=2"]
    straight, restarted = os.path.join(a.work, "straight"), os.path.join(a.work, "torchrun")
    run([a.plait] + common + ["--out", straight])
    out = run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--max-restarts", "1",
               "--master-port", str(free_port()), "--no-python", a.plait] + common +
              ["--out", restarted, "--set", 'checkpoint.resume="auto"', "--set", 'debug.faults=["kill rank=1 step=6"]'])
    resumed = [l for l in out.splitlines() if "resumed from" in l]
    if not resumed or "step-4" not in resumed[0]:
        sys.exit(f"the restarted ranks did not resume from step-4:\n{out}")
    diff = subprocess.run([a.plait, "checkpoint", "diff", straight, restarted], capture_output=True, text=True)
    if diff.returncode != 0:
        sys.exit(f"torchrun's restarted job ended with other weights: {diff.stdout}{diff.stderr}")
    if losses(straight) != losses(restarted):
        sys.exit(f"losses differ:\n{losses(straight)}\n{losses(restarted)}")
    print(f"torchrun restarted the job once; {resumed[0].strip()}; final weights and 8 losses equal")


if __name__ == "__main__":
    main()
