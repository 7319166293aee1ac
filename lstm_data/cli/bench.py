"""Run the performance-regression benchmarks: same-run medians and ratios, with floors.

Every stage measures lstm_data's path and its baselines in the same run (Python
twins, lstm_ee-style legacy paths, np.copyto, xz -dc, and peers such as pandas,
pyarrow and awkward when installed) and prints medians and ratios. --check exits
1 and names each ratio below its floor in bench/floors.toml; only ratios are
checked, never absolute times.
"""
from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="smaller data and fewer repeats (CI)")
    parser.add_argument("--only", metavar="STAGES",
                        help="comma-separated: kernels,readers,batches,scale,consumers")
    parser.add_argument("--json", metavar="OUT", help="write machine info, timings and ratios")
    parser.add_argument("--check", action="store_true", help="exit 1 when a ratio misses its floor")
    parser.add_argument("--plot", metavar="OUT.png", help="bar chart of throughput per stage")
    parser.add_argument("--floors", metavar="TOML", help="floors file (default: the packaged one)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated data")
    parser.add_argument("--compare", nargs=2, metavar=("A.json", "B.json"),
                        help="compare two --json results instead of running")


def run(args: argparse.Namespace) -> int:
    from lstm_data.bench.suite import compare, run_suite, save_json

    if args.compare:
        print(compare(*args.compare))
        return 0
    groups = [g.strip() for g in args.only.split(",") if g.strip()] if args.only else None
    report, meta = run_suite(groups, quick=args.quick, seed=args.seed, floors_path=args.floors,
                             log=(lambda msg: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr)))
    from lstm_data import kernels
    print(f"lstm-data bench ({'quick' if args.quick else 'full'}; backend {kernels.BACKEND}; "
          f"seconds per group {meta['seconds']})")
    print(report.render())
    if args.json:
        save_json(report, meta, args.json)
    if args.plot:
        from lstm_data.bench.plot import plot_report
        plot_report(report, args.plot)
    failures = report.failures()
    if args.check and failures:
        for r in failures:
            print(f"FLOOR MISSED: {r.describe()}", file=sys.stderr)
        return 1
    return 0
