"""Compute a spec file's "auto" standardisation from the training data and write it into the file."""
from __future__ import annotations

import argparse

from lstm_data.cli.csv_options import add_csv_arguments, csv_options

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", metavar="SPEC.toml", nargs="?", default=None,
                        help="(required) spec file with Standardize(center/scale = \"auto\") entries; the numbers replace "
                             "each \"auto\" in place, comments and layout kept (a temporary file, then a rename)")
    parser.add_argument("--data", required=True, nargs="+", metavar="PATH",
                        help="the training data (any format lstm_data.open reads; several paths concatenate; "
                             "a last path ending in .toml after them is taken for SPEC.toml)")
    parser.add_argument("--fraction", type=float, default=0.1, metavar="F",
                        help="share of the rows sampled, in (0, 1] (default: 0.1, weaver-core's data_fraction)")
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the row sample (default: 0)")
    parser.add_argument("--schema", metavar="FILE.toml", default=None,
                        help="declared groups/scalars for inputs that do not store them (CSV, lstm_ee HDF5)")
    add_csv_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from lstm_data.batching.spec.fit_file import fit_spec_file
    from lstm_data.errors import OptionError
    from lstm_data.batching.spec.batch_spec import BatchSpec
    from lstm_data.batching.spec.fitting import auto_variables
    from lstm_data.io import open as open_dataset
    from lstm_data.io.read_options import ReadOptions

    if not 0 < args.fraction <= 1:  # named as the option given, before any work
        raise OptionError(f"--fraction must be in (0, 1], got {args.fraction:g}")
    if args.spec is None:  # "--data a.csv spec.toml": --data took every path that followed it
        if len(args.data) < 2 or not args.data[-1].lower().endswith(".toml"):
            raise OptionError("the spec file is missing: lstm-data fit SPEC.toml --data PATH [PATH ...]")
        args.spec = args.data.pop()
    spec = BatchSpec.from_toml(args.spec)
    wanted = auto_variables(spec)
    if not wanted:
        print(f"{args.spec}: no \"auto\" standardisation to fit")
        return 0
    read = ReadOptions.from_toml(args.spec)
    if read.columns is None and read.needed is None:
        read = read.replace(needed=tuple(spec.variables))
    data = args.data[0] if len(args.data) == 1 else args.data
    dataset = open_dataset(data, schema=args.schema, read=read, **csv_options(args))
    fitted = fit_spec_file(args.spec, dataset, fraction=args.fraction, seed=args.seed)
    for _, name, fld in fitted.fields():
        for var, std in (getattr(fld, "standardize", None) or {}).items():
            if var in wanted:  # the result goes to stdout, with -q too
                print(f"{name}.{var}: center = {std.center!r}, scale = {std.scale!r}")
    return 0
