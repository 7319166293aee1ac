#!/usr/bin/env python
"""Benchmark the CSV reader against pandas and lstm_ee's path (same-run ratios).

Usage: python bench/readers.py [--quick] [--check] [--rows N]

On a generated NOvA-like CSV (100k rows; 20k with ``--quick``), cached under
``bench/.cache/``, it reports medians and these same-run ratios (issue 3):

* ``read_csv vs pandas plain numeric``: pandas.read_csv time on a plain CSV
  holding the same number texts one per cell, over our time (floor >= 1.0);
* ``read_csv vs lstm_ee path``: pandas.read_csv + per-cell
  ``np.array([float(y) for y in s.split(',')], float32)``, over our time (>= 30);
* ``peak RSS / budget``: peak RSS of a fresh process that reads the CSV, over
  1.5 x the final columnar bytes + 64 MB (<= 1.0);
* ``read .csv.xz / xz -dc``: our time on the .csv.xz over ``xz -dc FILE >
  /dev/null`` (<= 1.25).

``--check`` exits non-zero and names every missed floor. pandas is a
bench-only dependency. Ratios only: absolute times vary between machines.
"""
from __future__ import annotations

import argparse
import json
import lzma
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
sys.path.insert(0, str(HERE.parent))

from lstm_data.readers.csv import read_csv  # noqa: E402
from lstm_data.synthetic import write_csv  # noqa: E402

FLOORS = {
    "read_csv vs pandas plain numeric": ("min", 1.0),
    "read_csv vs lstm_ee path": ("min", 30.0),
    "peak RSS / budget": ("max", 1.0),
    "read .csv.xz / xz -dc": ("max", 1.25),
}
PLAIN_WIDTH = 50


def cached_files(n_rows: int) -> dict[str, Path]:
    """The NOvA-like CSV, its .xz and the plain numeric CSV (made once)."""
    CACHE.mkdir(exist_ok=True)
    csv_path = CACHE / f"nova_{n_rows}.csv"
    if not csv_path.exists():
        write_csv(csv_path, n_rows, seed=0)
    xz_path = CACHE / f"nova_{n_rows}.csv.xz"
    if not xz_path.exists():
        tmp = xz_path.with_suffix(".tmp")
        tmp.write_bytes(lzma.compress(csv_path.read_bytes(), preset=6))
        tmp.rename(xz_path)
    plain_path = CACHE / f"nova_{n_rows}_plain.csv"
    if not plain_path.exists():
        body = csv_path.read_bytes().split(b"\n", 1)[1]
        tokens = re.findall(rb'[^,"\r\n]+', body)
        rows = [b",".join(tokens[i:i + PLAIN_WIDTH]) for i in range(0, len(tokens), PLAIN_WIDTH)]
        header = b",".join(b"c%d" % i for i in range(PLAIN_WIDTH))
        tmp = plain_path.with_suffix(".tmp")
        tmp.write_bytes(header + b"\n" + b"\n".join(rows) + b"\n")
        tmp.rename(plain_path)
    return {"csv": csv_path, "xz": xz_path, "plain": plain_path}


def lstm_ee_read(path: Path) -> dict:
    """lstm_ee's path: pandas.read_csv, then one Python float per number per cell."""
    import pandas as pd

    frame = pd.read_csv(path)
    out = {}
    for name in frame.columns:
        column = frame[name]
        if not pd.api.types.is_numeric_dtype(column):
            out[name] = [np.array([float(y) for y in s.split(",")], dtype=np.float32)
                         if isinstance(s, str) else np.zeros(0, np.float32) for s in column]
        else:
            out[name] = column.to_numpy(np.float32)
    return out


def medians(cases: dict, repeats: int) -> dict[str, float]:
    """Median seconds of each case, timed round-robin after one warm-up round."""
    for fn in cases.values():
        fn()
    samples = {name: [] for name in cases}
    for _ in range(repeats):
        for name, fn in cases.items():
            t0 = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - t0)
    return {name: statistics.median(s) for name, s in samples.items()}


def peak_rss(path: Path) -> tuple[int, int]:
    """(peak RSS bytes, final columnar bytes) of a fresh process reading ``path``.

    The peak is the process's ``VmHWM``: unlike ``ru_maxrss`` it starts afresh at
    ``exec``, so the benchmark's own memory does not leak into it.
    """
    code = ("import json, sys\n"
            "from lstm_data.readers.csv import read_csv\n"
            "ds = read_csv(sys.argv[1])\n"
            "rss = next(int(line.split()[1]) * 1024 for line in open('/proc/self/status')\n"
            "           if line.startswith('VmHWM:'))\n"
            "print(json.dumps([rss, ds.nbytes]))\n")
    out = subprocess.run([sys.executable, "-c", code, str(path)], check=True,
                         capture_output=True, text=True, cwd=HERE.parent).stdout
    rss, nbytes = json.loads(out.strip().splitlines()[-1])
    return rss, nbytes


def xz_decompress(path: Path) -> None:
    with open(os.devnull, "wb") as sink:
        subprocess.run(["xz", "-dc", str(path)], stdout=sink, check=True)


def run(n_rows: int, repeats: int) -> tuple[list[tuple[str, float, str]], list[str]]:
    import pandas as pd

    files = cached_files(n_rows)
    size_mb = files["csv"].stat().st_size / 1e6
    lines = [f"data: {n_rows} rows, {size_mb:.1f} MB CSV, "
             f"{files['xz'].stat().st_size / 1e6:.1f} MB .xz, {os.cpu_count()} CPUs"]
    times = medians({"read_csv": lambda: read_csv(files["csv"]),
                     "pandas plain numeric": lambda: pd.read_csv(files["plain"])}, repeats)
    legacy = medians({"lstm_ee path": lambda: lstm_ee_read(files["csv"]),
                      "read_csv ": lambda: read_csv(files["csv"])}, 1)
    times.update(legacy)
    xz_times = {}
    if shutil.which("xz"):
        xz_times = medians({"read_csv .csv.xz": lambda: read_csv(files["xz"]),
                            "xz -dc": lambda: xz_decompress(files["xz"])}, max(3, repeats // 2))
        times.update(xz_times)
    rss, nbytes = peak_rss(files["csv"])
    budget = 1.5 * nbytes + 64e6
    for name, seconds in times.items():
        lines.append(f"  {name.strip():<24s} median {seconds * 1e3:9.1f} ms")
    lines.append(f"  read_csv throughput      {size_mb / times['read_csv']:9.1f} MB/s")
    lines.append(f"  peak RSS {rss / 1e6:.1f} MB, columnar {nbytes / 1e6:.1f} MB, "
                 f"budget {budget / 1e6:.1f} MB")
    ratios = [
        ("read_csv vs pandas plain numeric", times["pandas plain numeric"] / times["read_csv"]),
        ("read_csv vs lstm_ee path", legacy["lstm_ee path"] / legacy["read_csv "]),
        ("peak RSS / budget", rss / budget),
    ]
    if xz_times:
        ratios.append(("read .csv.xz / xz -dc", xz_times["read_csv .csv.xz"] / xz_times["xz -dc"]))
    rows = []
    for name, value in ratios:
        kind, floor = FLOORS[name]
        ok = value >= floor if kind == "min" else value <= floor
        rows.append((name, value, f"{'>=' if kind == 'min' else '<='} {floor:g}  "
                                  f"{'ok' if ok else 'MISSED'}"))
    return rows, lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20k rows, fewer repeats (<60 s)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a floor is missed")
    parser.add_argument("--rows", type=int, default=None, help="rows of the generated CSV")
    args = parser.parse_args(argv)
    n_rows = args.rows or (20_000 if args.quick else 100_000)
    rows, lines = run(n_rows, repeats=3 if args.quick else 5)
    print("\n".join(lines))
    print(f"\n{'ratio':<36s} {'value':>8s}  floor")
    for name, value, verdict in rows:
        print(f"{name:<36s} {value:8.2f}  {verdict}")
    missed = [name for name, _, verdict in rows if verdict.endswith("MISSED")]
    if args.check and missed:
        print("missed floors: " + "; ".join(missed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
