"""The per-rank traces of [debug] trace_steps, read by Holistic Trace Analysis itself.

A dp 2 x pp 2 run (ddp, 1f1b) traces step 2; HTA's TraceAnalysis reads trace/ as it
reads PyTorch profiler traces: it must find four ranks, each by its distributedInfo (HTA
falls back to rank 0 for a file whose rank it cannot find, so two files would collide),
and hold each rank's forwards, backwards, collectives and sends with their durations.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plait", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = os.path.join(args.work, "run")
    r = subprocess.run([args.plait, "run", os.path.join(root, "configs", "quickstart.toml"), "--steps", "3", "--out", out,
                        "--set", "parallel.pipeline=1f1b", "--set", "parallel.pp=2", "--set", "parallel.dp=2",
                        "--set", "train.grad_accum=4", "--set", "data.micro_batch_size=2",
                        "--set", "debug.trace_steps=[2]"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"plait run failed:\n{r.stdout}\n{r.stderr}")

    from hta.trace_analysis import TraceAnalysis

    analysis = TraceAnalysis(trace_dir=os.path.join(out, "trace"))
    ranks = sorted(analysis.t.traces.keys())
    assert ranks == [0, 1, 2, 3], f"HTA found ranks {ranks}"
    for rank in ranks:
        df = analysis.t.get_trace(rank)
        names = set(analysis.t.symbol_table.sym_table[i] for i in df["name"].unique())
        with open(os.path.join(out, "trace", f"rank-{rank}.json")) as f:
            ours = json.load(f)
        slices = [e for e in ours["traceEvents"] if e["ph"] == "X"]
        for needed in ("F0", "B3", "optimizer"):
            assert needed in names, f"rank {rank}: HTA's events lack {needed!r}: {sorted(names)[:20]}"
        assert any(n.startswith("send pp.") or n.startswith("recv pp.") for n in names), f"rank {rank}: no transfer"
        # Every slice this rank's file holds is one of HTA's events.
        assert len(df) == len(slices), f"rank {rank}: HTA read {len(df)} events of the file's {len(slices)} slices"
        print(f"rank {rank}: HTA read {len(df)} events, {len(names)} names")
    print("PASS")


if __name__ == "__main__":
    main()
