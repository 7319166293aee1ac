"""Convert inputs of any format lstm_data reads into its zarr v3 or HDF5 layout (atomic output).

Examples::

    lstm-data convert events.csv.xz events.zarr
    lstm-data convert part1.h5 part2.h5 'more/*.csv.gz' all.zarr --shuffle-seed 42
    lstm-data convert events.csv events.h5 --schema schema.toml --overwrite
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Callable

from lstm_data._util.deprecation import add_renamed_flags
from lstm_data._util.plural import counted

__all__ = ["add_arguments", "run"]



def _at_least(low: int) -> Callable[[str], int]:
    """An argparse type: an int of at least ``low`` (rejected before any input is read)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value
    return parse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="SRC... DST",
                        help="inputs (files, glob patterns or URLs of any format lstm_data.open reads), then the "
                             "output (.zarr, .h5 or .hdf5)")
    parser.add_argument("--shuffle-seed", type=_at_least(0), metavar="SEED", default=None,
                        help="write rows in a random order made from SEED (pre-shuffled file: contiguous "
                             "batches are then random batches); inputs larger than RAM are shuffled "
                             "through temporary files next to DST (disk: the table's size, once)")
    parser.add_argument("--schema", metavar="FILE.toml", default=None,
                        help="declared groups/scalars/dtype for inputs that do not store them")
    from lstm_data.cli.csv_options import add_csv_arguments

    add_csv_arguments(parser)
    parser.add_argument("--overwrite", dest="overwrite", action="store_true",
                        help="replace an existing output, if it is a store or file that lstm_data "
                             "wrote (anything else is refused)")
    parser.add_argument("--chunk-kib", type=_at_least(1), default=1024, metavar="KIB",
                        help="uncompressed chunk size of the output (default 1024)")
    parser.add_argument("--threads", type=_at_least(1), default=None, metavar="N",
                        help="threads that parse CSV inputs (default: every available core)")
    parser.add_argument("--scheduler", metavar="ADDRESS", default=None,
                        help="convert on a Dask cluster: a scheduler address (tcp://host:8786) or "
                             "local:N for N local worker processes (extra dask); one task per input "
                             "file or per row-aligned byte range of a large plain CSV; the output is "
                             "bitwise the one of a convert without it")
    parser.add_argument("--compression", choices=("gzip", "lzf", "none"), default="gzip",
                        help="HDF5 output filter (default gzip); every HDF5 output also carries "
                             "the fletcher32 checksum")
    add_renamed_flags(parser, "lstm-data convert")


def run(args: argparse.Namespace) -> int:
    from lstm_data._util.progress import ByteProgress
    from lstm_data._util.safe_output import check_not_input
    from lstm_data.io.ours.convert import convert_streaming, output_kind
    from lstm_data.io.dispatch import expand_paths

    if len(args.paths) < 2:
        print("lstm-data convert: error: give at least one SRC and a DST", file=sys.stderr)
        return 2
    *sources, dst = args.paths
    output_kind(dst)
    paths = expand_paths(sources)
    check_not_input(dst, paths)  # before reading anything
    if os.path.lexists(dst):
        from lstm_data.io.ours.ownership import check_replaceable, refusal

        if not args.overwrite:
            raise FileExistsError(refusal(dst))
        check_replaceable(dst)  # --overwrite: only an output of ours
    start = time.perf_counter()
    from lstm_data.cli.csv_options import csv_options

    options = dict(schema=args.schema, shuffle_seed=args.shuffle_seed, overwrite=args.overwrite, **csv_options(args),
                   chunk_bytes=args.chunk_kib << 10, threads=args.threads,
                   compression=None if args.compression == "none" else args.compression)
    with ByteProgress(f"convert to {Path(dst).name}", enabled=not args.quiet) as bar:
        if args.scheduler is None:
            table = convert_streaming(paths, dst, progress=bar, **options)
        else:
            from lstm_data.scale.cluster import connect
            from lstm_data.scale.convert import convert_distributed

            with connect(args.scheduler) as client:
                table = convert_distributed(paths, dst, client=client, progress=bar, **options)
    import lstm_data.io.dispatch as dispatch  # the result goes to stdout, with -q too
    from lstm_data.io.dispatch import input_bytes

    out = dispatch.open(dst)
    groups = ", ".join(f"{g}[{len(v)}]" for g, v in table.groups.items()) or "none"
    shuffled = f", shuffled with seed {args.shuffle_seed}" if args.shuffle_seed is not None else ""
    print(f"wrote {dst}: {counted(len(out), 'row')}, {counted(len(table.scalar_names), 'scalar')}, "
          f"groups {groups}{shuffled}; "
          f"{input_bytes(dst) / 2**20:.1f} MiB in {time.perf_counter() - start:.1f} s")
    return 0
