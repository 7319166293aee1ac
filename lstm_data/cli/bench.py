"""Time your data path (--data, --spec), or run the benchmark suite of a checkout.

With ``--data PATH --spec SPEC.toml``: open the data, run epochs of its batches and
report medians of a few runs, with the padded slots per real element of each
ragged output (see ``lstm_data.cli.bench_own``).

Without ``--data``, in a checkout of the repository: the performance-regression
suite in its ``bench/`` folder. Every stage measures lstm_data's path and its
baselines in the same run (Python twins, lstm_ee-style legacy paths, np.copyto,
xz -dc, and peers such as pandas, pyarrow and awkward when installed) and prints
medians and ratios. --check exits 1 and names each ratio below its floor in
bench/floors.toml; only ratios are checked, never absolute times. The suite is
not installed with the package.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from types import ModuleType

#: options of the suite only (no meaning for --data), by their ``args`` name and flag
_SUITE_ONLY = {"only": "--only", "check": "--check", "plot": "--plot", "floors": "--floors",
               "compare": "--compare"}
#: options of --data only (no meaning for the suite)
_OWN_ONLY = {"batch_size": "--batch-size", "threads": "--threads", "runs": "--runs"}

_NO_SUITE = """\
lstm-data bench: the benchmark suite is not installed with lstm_data; it runs from a checkout.
  Time your own data:     lstm-data bench --data PATH --spec SPEC.toml [--batch-size N]
  Run the full suite:     clone the lstm_data repository, `pip install -e ".[bench]"` in it,
                          then `lstm-data bench --quick` (or `python -m bench --quick` there)"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    own = parser.add_argument_group("your data (works in any install)")
    own.add_argument("--data", nargs="+", metavar="PATH",
                     help="data to time: any format lstm_data.open reads; several paths concatenate")
    own.add_argument("--spec", metavar="SPEC.toml",
                     help="BatchSpec TOML (its [order] and [read] tables are used too)")
    own.add_argument("--batch-size", type=int, default=None, metavar="N",
                     help="rows per batch (default: the spec's [order], else 1024)")
    own.add_argument("--threads", type=int, default=None, metavar="N",
                     help="batch-building threads of the timed epochs (default: 1)")
    own.add_argument("--runs", type=int, default=None, metavar="N",
                     help="timed runs, medians reported (default: 3; 1 with --quick)")
    suite = parser.add_argument_group("the benchmark suite (from a checkout)")
    suite.add_argument("--quick", action="store_true", help="smaller data and fewer repeats (CI)")
    suite.add_argument("--only", metavar="STAGES",
                       help="comma-separated: kernels,readers,batches,scale,consumers,many_files")
    suite.add_argument("--json", metavar="OUT", help="write machine info, timings and ratios")
    suite.add_argument("--check", action="store_true", help="exit 1 when a ratio misses its floor")
    suite.add_argument("--plot", metavar="OUT.png", help="bar chart of throughput per stage")
    suite.add_argument("--floors", metavar="TOML", help="floors file (default: bench/floors.toml)")
    suite.add_argument("--seed", type=int, default=0, help="seed of the generated data (and of --data's order)")
    suite.add_argument("--compare", nargs=2, metavar=("A.json", "B.json"),
                       help="compare two --json results instead of running")


def checkout_root() -> Path | None:
    """The repository root when lstm_data runs from a checkout that holds the suite, else ``None``.

    The suite is the ``bench`` package beside the ``lstm_data`` package (an editable
    install or the source tree); an installed wheel has none.
    """
    import lstm_data

    root = Path(lstm_data.__file__).resolve().parents[1]
    suite = root / "bench"
    return root if (suite / "__init__.py").is_file() and (suite / "suite.py").is_file() else None


def load_suite(root: Path, name: str = "suite") -> ModuleType:
    """Import ``bench.<name>`` from the checkout at ``root`` (put first on ``sys.path``).

    Raises
    ------
    ValueError
        Another package named ``bench`` was imported instead of the checkout's.
    """
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    module = importlib.import_module(f"bench.{name}")
    where = Path(module.__file__ or "").resolve().parent
    if where != root / "bench":
        raise ValueError(f"'bench.{name}' was imported from {where}, not from the checkout's "
                          f"{root / 'bench'}: another package named 'bench' shadows the suite")
    return module


def run(args: argparse.Namespace) -> int:
    if args.data or args.spec:
        return _run_own(args)
    root = checkout_root()
    if root is None:
        print(_NO_SUITE, file=sys.stderr)
        return 2
    return _run_suite(args, root)


def _run_own(args: argparse.Namespace) -> int:
    given = [flag for name, flag in _SUITE_ONLY.items() if getattr(args, name)]
    if given:
        raise ValueError(f"{', '.join(given)}: options of the benchmark suite, not of --data")
    if not (args.data and args.spec):
        raise ValueError("--data and --spec go together: lstm-data bench --data PATH --spec SPEC.toml")
    from lstm_data.cli.bench_own import bench_own, render, save_json

    runs = args.runs if args.runs is not None else (1 if args.quick else 3)
    result = bench_own(args.data, args.spec, batch_size=args.batch_size, runs=runs,
                       threads=args.threads or 1, seed=args.seed)
    print(render(result))
    if args.json:
        save_json(result, args.json)
    return 0


def _run_suite(args: argparse.Namespace, root: Path) -> int:
    given = [flag for name, flag in _OWN_ONLY.items() if getattr(args, name) is not None]
    if given:
        raise ValueError(f"{', '.join(given)}: options of --data, not of the benchmark suite")
    suite = load_suite(root)
    if args.compare:
        print(suite.compare(*args.compare))
        return 0
    groups = [g.strip() for g in args.only.split(",") if g.strip()] if args.only else None
    report, meta = suite.run_suite(groups, quick=args.quick, seed=args.seed, floors_path=args.floors,
                                   log=(lambda msg: None) if args.quiet
                                   else (lambda msg: print(msg, file=sys.stderr)))
    from lstm_data import kernels
    print(f"lstm-data bench ({'quick' if args.quick else 'full'}; backend {kernels.BACKEND}; "
          f"seconds per group {meta['seconds']})")
    print(report.render())
    if args.json:
        suite.save_json(report, meta, args.json)
    if args.plot:
        load_suite(root, "plot").plot_report(report, args.plot)
    failures = report.failures()
    if args.check and failures:
        for r in failures:
            print(f"FLOOR MISSED: {r.describe()}", file=sys.stderr)
        return 1
    return 0
