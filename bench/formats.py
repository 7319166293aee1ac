#!/usr/bin/env python
"""Benchmark file formats: lstm_ee HDF5 open vs naive per-row h5py, zarr open, on-disk take.

Same-run medians and ratios (see lstm_data/benchmarks/formats.py).

Usage: python bench/formats.py [--quick] [--check] [--seed N] [--json OUT]
"""
import argparse
import json
import sys

from lstm_data.benchmarks.formats import FLOORS, run


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller data, fewer repeats (< 60 s)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a ratio misses its bound")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="OUT", help="write timings and ratios as JSON")
    args = parser.parse_args(argv)
    report = run(quick=args.quick, seed=args.seed)
    for r in report.ratios:
        if r.name in FLOORS:
            r.floor, r.kind = FLOORS[r.name]
    print(report.render())
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"timings": report.timings,
                       "ratios": [{"name": r.name, "value": r.value, "bound": r.floor,
                                   "kind": r.kind, "ok": r.ok} for r in report.ratios]}, fh, indent=1)
    failures = report.failures()
    if args.check and failures:
        for r in failures:
            print(f"FAILED {r.describe()}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
