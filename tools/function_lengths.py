#!/usr/bin/env python3
"""Function lengths in plait's own C++ (core/, plugins/ and sdk/, their tests apart):
none may pass --most lines, and at most --allowed may pass --long. Lengths are lizard's
(the function's line span). Prints each long function; exits 1 when a limit is passed.

  .venv/bin/python tools/function_lengths.py [--most 80] [--long 60] [--allowed 3]
"""
import argparse
import pathlib
import sys

import lizard

ROOT = pathlib.Path(__file__).resolve().parent.parent


def sources():
    for folder in ("core", "plugins", "sdk"):
        for path in sorted((ROOT / folder).rglob("*")):
            parts = path.relative_to(ROOT).parts
            if path.suffix in (".cpp", ".hpp", ".h") and "tests" not in parts and "abi" not in parts:
                yield path


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--most", type=int, default=80)
    parser.add_argument("--long", type=int, default=60)
    parser.add_argument("--allowed", type=int, default=3)
    args = parser.parse_args()
    long_ones = []
    for path in sources():
        for f in lizard.analyze_file(str(path)).function_list:
            if f.length > args.long:
                long_ones.append((f.length, f"{path.relative_to(ROOT)}:{f.start_line}", f.name))
    long_ones.sort(reverse=True)
    for length, place, name in long_ones:
        print(f"{length:4d} lines  {name}  ({place})")
    too_long = [f for f in long_ones if f[0] > args.most]
    print(f"{len(too_long)} function(s) over {args.most} lines, {len(long_ones)} over {args.long} "
          f"(at most {args.allowed} allowed)")
    return 1 if too_long or len(long_ones) > args.allowed else 0


if __name__ == "__main__":
    sys.exit(main())
