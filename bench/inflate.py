"""Inflate the zlib baskets of a ROOT file with each installed inflater: speed (median of interleaved runs,
one thread) and exactness (every basket's bytes equal zlib's).

    python bench/inflate.py FILE.root [--runs 7]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import uproot

from lstm_data.io.root.baskets import INFLATERS, _make_inflater


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n")[0])
    parser.add_argument("file")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    blocks = []  # (compressed body, uncompressed size) of every ZL block of every basket
    with uproot.open(args.file) as fh, open(args.file, "rb") as raw:
        tree = fh[[k for k, c in fh.classnames(cycle=False).items() if c == "TTree"][0]]
        for branch in tree.branches:
            for seek, size in zip(branch.member("fBasketSeek"), branch.member("fBasketBytes")):
                if not size:
                    continue
                raw.seek(int(seek))
                data = raw.read(int(size))
                keylen = int.from_bytes(data[14:16], "big")
                pos = keylen
                while pos < len(data) and data[pos:pos + 2] == b"ZL":
                    csize = int.from_bytes(data[pos + 3:pos + 6], "little")
                    usize = int.from_bytes(data[pos + 6:pos + 9], "little")
                    blocks.append((data[pos + 9:pos + 9 + csize], usize))
                    pos += 9 + csize
    total = sum(u for _, u in blocks)
    inflaters = {}
    for name in INFLATERS:
        try:
            inflaters[name] = _make_inflater(name)
        except ImportError:
            print(f"{name}: not installed")
    reference = [inflaters["zlib"](b, u) for b, u in blocks]
    times: dict[str, list[float]] = {name: [] for name in inflaters}
    for _ in range(args.runs):
        for name, inflate in inflaters.items():
            t = time.perf_counter()
            out = [inflate(b, u) for b, u in blocks]
            times[name].append(time.perf_counter() - t)
            assert out == reference, f"{name} differs from zlib"
    print(f"{len(blocks)} zlib blocks, {total / 1e6:.1f} MB inflated, {os.cpu_count()} cores")
    zl = statistics.median(times["zlib"])
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:10s} {total / med / 1e6:7.1f} MB/s  {zl / med:.2f}x zlib  (exact: every block equals zlib's)")


if __name__ == "__main__":
    main()
