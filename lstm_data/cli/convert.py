"""Convert CSV/HDF5/zarr inputs into lstm_data's zarr v3 or HDF5 layout (atomic output).

Examples::

    lstm-data convert events.csv.xz events.zarr
    lstm-data convert part1.h5 part2.h5 'more/*.csv.gz' all.zarr --shuffle 42
    lstm-data convert events.csv events.h5 --schema schema.toml --force
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

__all__ = ["add_arguments", "run"]

_ZARR_SUFFIXES = (".zarr",)
_HDF5_SUFFIXES = (".h5", ".hdf5", ".hdf")


def _at_least(low: int):
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
                        help="input files or glob patterns, then the output (.zarr, .h5 or .hdf5)")
    parser.add_argument("--shuffle", type=_at_least(0), metavar="SEED", default=None,
                        help="write rows in a seeded random order (pre-shuffled file: contiguous "
                             "batches are then random batches)")
    parser.add_argument("--schema", metavar="FILE.toml", default=None,
                        help="declared groups/scalars/dtype for inputs that do not store them")
    parser.add_argument("--force", action="store_true", help="replace an existing output")
    parser.add_argument("--chunk-kib", type=_at_least(1), default=1024, metavar="KIB",
                        help="uncompressed chunk size of the output (default 1024)")
    parser.add_argument("--compression", choices=("gzip", "lzf", "none"), default="gzip",
                        help="HDF5 output filter (default gzip); every HDF5 output also carries "
                             "the fletcher32 checksum")


def _output_kind(dst: str) -> str:
    low = dst.rstrip("/").lower()
    if low.endswith(_ZARR_SUFFIXES):
        return "zarr"
    if low.endswith(_HDF5_SUFFIXES):
        return "hdf5"
    raise ValueError(f"output {dst!r} must end in .zarr, .h5 or .hdf5")


def _open_sources(sources: list[str], schema, progress_enabled: bool):
    """Open every source; CSV inputs report their reading progress in file bytes."""
    from lstm_data._util.progress import ByteProgress
    from lstm_data.data.concat import ConcatDataset
    from lstm_data.io.dispatch import detect_format, expand_paths
    from lstm_data.io.dispatch import open as open_dataset

    paths = expand_paths(sources)
    datasets = []
    for path in paths:
        if detect_format(path) == "csv":
            from lstm_data.io.csv.reader import read_csv

            with ByteProgress(f"read {Path(path).name}", enabled=progress_enabled) as bar:
                datasets.append(read_csv(path, schema=schema, progress=bar))
        else:
            datasets.append(open_dataset(path, schema=schema))
    if len(datasets) == 1:
        return datasets[0]
    return ConcatDataset(datasets, names=paths)


def _size_of(path: Path) -> int:
    if path.is_dir():
        return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    return path.stat().st_size


def run(args: argparse.Namespace) -> int:
    from lstm_data._util.progress import ByteProgress
    from lstm_data._util.safe_output import check_not_input
    from lstm_data.io.dispatch import expand_paths
    from lstm_data.io.write import write_hdf5, write_zarr

    if len(args.paths) < 2:
        print("lstm-data convert: error: give at least one SRC and a DST", file=sys.stderr)
        return 2
    *sources, dst = args.paths
    kind = _output_kind(dst)
    check_not_input(dst, expand_paths(sources))  # before reading anything
    if os.path.exists(dst) and not args.force:
        print(f"lstm-data convert: error: {dst} exists (use --force to replace it)",
              file=sys.stderr)
        return 1
    start = time.perf_counter()
    dataset = _open_sources(sources, args.schema, not args.quiet)
    permutation = None
    if args.shuffle is not None:
        permutation = np.random.default_rng(args.shuffle).permutation(len(dataset))
    options = {"permutation": permutation, "overwrite": args.force,
               "chunk_bytes": args.chunk_kib << 10}
    with ByteProgress(f"write {Path(dst).name}", enabled=not args.quiet) as bar:
        if kind == "zarr":
            write_zarr(dataset, dst, progress=bar, **options)
        else:
            compression = None if args.compression == "none" else args.compression
            write_hdf5(dataset, dst, progress=bar, compression=compression, **options)
    close = getattr(dataset, "close", None)
    if close is not None:
        close()
    if not args.quiet:
        groups = ", ".join(f"{g}[{len(v)}]" for g, v in dataset.groups.items()) or "none"
        print(f"wrote {dst}: {len(dataset)} rows, {len(dataset.scalar_names)} scalars, "
              f"groups {groups}{', shuffled with seed %d' % args.shuffle if permutation is not None else ''}; "
              f"{_size_of(Path(dst)) / 2**20:.1f} MiB in {time.perf_counter() - start:.1f} s")
    return 0
