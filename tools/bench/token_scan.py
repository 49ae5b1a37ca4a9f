#!/usr/bin/env python3
"""Benchmark: how long the check path takes to scan a large token file.

`plait config validate` reads every token of [data] path to refuse a token the model's
vocabulary cannot embed before anything starts. This writes a uint16 token file of --gb
gigabytes (random tokens below 50257), then runs `plait -v config validate` on it and on a
tiny file of the same format, side by side, --rounds times: the scan's own time (its
debug line, measured around the scan) and the whole command's wall time. The file was
just written, so it is in the page cache (what a second run sees).

  .venv/bin/python tools/bench/token_scan.py              # 1 GB, 5 rounds
  .venv/bin/python tools/bench/token_scan.py --gb 4 --rounds 3
"""
import argparse
import re
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
PLAIT = ROOT / "build" / "bin" / "plait"


def write_tokens(path: Path, count: int) -> None:
    rng = np.random.default_rng(0)
    chunk = 1 << 26
    with open(path, "wb") as f:
        for start in range(0, count, chunk):
            rng.integers(0, 50257, size=min(chunk, count - start), dtype=np.uint16).tofile(f)


def config(folder: Path, data: Path) -> Path:
    path = folder / f"{data.stem}.toml"
    path.write_text(
        '[model]\nsize = "124m"\n[data]\nsource = "tokens"\n'
        f'path = "{data}"\nmicro_batch_size = 1\nseq_len = 64\n'
    )
    return path


def validate(cfg: Path) -> tuple:
    """(the command's wall seconds, the scan's own seconds from its debug line)."""
    start = time.perf_counter()
    done = subprocess.run([str(PLAIT), "-v", "config", "validate", str(cfg)], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"plait config validate failed:\n{done.stdout}{done.stderr}")
    scan = re.search(r"token scan: .* in ([0-9.e-]+) s", done.stdout + done.stderr)
    return seconds, float(scan.group(1)) if scan else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gb", type=float, default=1.0, help="size of the token file in GB (1e9 bytes)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="plait-token-scan-") as tmp:
        folder = Path(tmp)
        big, small = folder / "big.bin", folder / "small.bin"
        tokens = int(args.gb * 1e9) // 2
        print(f"writing {tokens:,} tokens ({tokens * 2 / 1e9:.2f} GB) to {big}")
        write_tokens(big, tokens)
        write_tokens(small, 4096)
        big_cfg, small_cfg = config(folder, big), config(folder, small)
        big_runs, small_runs = [], []
        for _ in range(args.rounds):
            big_runs.append(validate(big_cfg))
            small_runs.append(validate(small_cfg))
        scans = [s for _, s in big_runs]
        wall_big = statistics.median(w for w, _ in big_runs)
        wall_small = statistics.median(w for w, _ in small_runs)
        scan = statistics.median(scans)
        gb = tokens * 2 / 1e9
        print(f"the scan of {gb:.2f} GB: median {scan:.3f} s = {gb / scan:.1f} GB/s over {args.rounds} rounds "
              f"{['%.3f' % x for x in scans]}")
        print(f"plait config validate: median {wall_big:.3f} s with the {gb:.2f} GB file, {wall_small:.3f} s with an "
              f"8 KB one (the rest of the checks: config, plugins, the 124m model's shapes)")


if __name__ == "__main__":
    main()
