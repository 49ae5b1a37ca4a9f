"""plait compare --html, looked at as a person would: the page is opened in headless
Chromium (Debian's), which takes a screenshot and dumps the DOM it rendered.

Two runs of the quickstart model (ddp, and ddp with another learning rate) are compared.
The page must hold no script and fetch nothing; the rendered DOM must hold the four SVG
charts, one loss curve per run with its last loss as the run's metrics.jsonl has it, and
a memory bar per rank whose value is that rank's peak in metrics.jsonl; the screenshot
must show both runs' colours over a real area (a chart that failed to draw shows none).
"""
import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib

RUN_COLOURS = {"first": (0x1F, 0x77, 0xB4), "second": (0xD6, 0x27, 0x28)}


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r.stdout


def decode_png(path):
    """(width, height, rows of RGB(A) bytes) of an 8-bit RGB or RGBA PNG, with the standard library."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6), f"unexpected PNG format {depth}/{colour}"
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def count_colour(rows, bpp, rgb, slack=12):
    n = 0
    for line in rows:
        for i in range(0, len(line), bpp):
            if all(abs(line[i + k] - rgb[k]) <= slack for k in range(3)):
                n += 1
    return n


def metrics(folder):
    with open(os.path.join(folder, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plait", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    chromium = shutil.which("chromium")
    if chromium is None:
        sys.exit("chromium is not installed (tools/setup installs Debian's chromium)")
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    quickstart = os.path.join(root, "configs", "quickstart.toml")
    first, second = os.path.join(args.work, "ddp"), os.path.join(args.work, "ddp-lr")
    run([args.plait, "run", quickstart, "--steps", "12", "--out", first])
    run([args.plait, "run", quickstart, "--steps", "12", "--out", second, "--set", "train.lr=1e-3"])
    page = os.path.join(args.work, "report.html")
    out = run([args.plait, "compare", first, second, "--html", page])
    assert "Not equivalent: the losses diverge at step 2" in out, out

    html = open(page).read()
    assert "<script" not in html.lower(), "the page has a script"
    fetched = re.findall(r'(?:src|href)\s*=\s*"([^"]+)"', html)
    assert not fetched, f"the page fetches {fetched}"

    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
             f"--user-data-dir={os.path.join(args.work, 'chromium-profile')}"]
    url = "file://" + page
    dom = run([chromium, *flags, "--dump-dom", url], timeout=120)
    for chart in ("loss-chart", "time-chart", "memory-chart", "comm-chart"):
        assert f'<svg id="{chart}"' in dom, f"the rendered page has no {chart}"
    for name, folder in (("ddp", first), ("ddp-lr", second)):
        m = metrics(folder)
        assert re.search(f'<polyline class="loss" data-run="{name}"', dom), f"no loss curve for {name}"
        legend = f"{name}: {m[-1]['loss']:.4f}</text>"
        assert legend in dom, f"the loss legend lacks '{legend}'"
        for rank in m[-1]["ranks"]:
            bar = f'data-name="{name}" data-value="{rank["peak_mem_bytes"]}"'
            assert bar in dom, f"no memory bar for {name} rank {rank['rank']} with its peak {rank['peak_mem_bytes']}"
    bars = len(re.findall(r'<rect class="bar"', dom))
    print(f"rendered DOM: 4 charts, {bars} bars, both loss curves with their last losses, every rank's peak")

    shot = os.path.join(args.work, "report.png")
    run([chromium, *flags, f"--screenshot={shot}", "--window-size=1100,2600", url], timeout=120)
    width, height, bpp, rows = decode_png(shot)
    seen = {run_: count_colour(rows, bpp, rgb) for run_, rgb in RUN_COLOURS.items()}
    print(f"screenshot {width}x{height}: pixels of the first run's colour {seen['first']}, the second's {seen['second']}")
    for run_, n in seen.items():
        assert n > 2000, f"the screenshot shows only {n} pixels of the {run_} run's colour: the charts did not render"
    print("PASS")


if __name__ == "__main__":
    main()
