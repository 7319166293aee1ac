#!/usr/bin/env python
"""Benchmark the compiled kernels against their baselines (same-run ratios).

Usage: python bench/kernels.py [--quick] [--check]
"""
import argparse
import sys

from lstm_data import kernels
from lstm_data.benchmarks.kernels import run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller data, fewer repeats")
    parser.add_argument("--check", action="store_true", help="exit 1 when a ratio misses its floor")
    args = parser.parse_args()
    report = run(quick=args.quick)
    print(f"backend: {kernels.BACKEND}")
    print(report.render())
    failures = report.failures()
    if args.check and failures:
        for r in failures:
            print(f"FLOOR MISSED: {r.describe()}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
