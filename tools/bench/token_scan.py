#!/usr/bin/env python3
"""Benchmark: how long `plait config validate` takes to scan a large token file.

The check path reads every token of [data] path to refuse a token the model's vocabulary
cannot embed before anything starts. This writes a uint16 token file of --gb gigabytes
(random tokens below 50257), then times `plait config validate` on it and on a tiny file
of the same format, side by side, --rounds times; the scan's cost is the difference of the
medians. The file is read once first, so the figures are for a file in the page cache
(what a second run, or a dataloader's warm-up, sees); the first, cold read is printed too.

  .venv/bin/python tools/bench/token_scan.py              # 1 GB, 5 rounds
  .venv/bin/python tools/bench/token_scan.py --gb 4 --rounds 3
"""
import argparse
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


def validate(cfg: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run([str(PLAIT), "config", "validate", str(cfg)], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"plait config validate failed:\n{done.stdout}{done.stderr}")
    return seconds


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
        print(f"first validate of the big file (as written: mostly in the page cache): {validate(big_cfg):.3f} s")
        with_scan, without = [], []
        for _ in range(args.rounds):
            with_scan.append(validate(big_cfg))
            without.append(validate(small_cfg))
        a, b = statistics.median(with_scan), statistics.median(without)
        print(f"validate, {args.gb:g} GB file: median {a:.3f} s over {args.rounds} rounds {['%.3f' % x for x in with_scan]}")
        print(f"validate, 8 KB file:  median {b:.3f} s {['%.3f' % x for x in without]}")
        print(f"the scan: {a - b:.3f} s for {tokens * 2 / 1e9:.2f} GB = {tokens * 2 / 1e9 / max(a - b, 1e-9):.2f} GB/s")


if __name__ == "__main__":
    main()
