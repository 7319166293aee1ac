"""Build every batch of an epoch once and store it in a zarr store for many trainings to reuse.

Example::

    lstm-data precompute --data examples/numu_v3.csv.xz --spec examples/numu_v3.toml \\
        --batch-size 1024 --seed 1 --out numu_v3_batches.zarr --threads 2

The store records the spec, the order and a fingerprint of every value of the data;
running again with the same settings and data reuses it. With other settings or edited
data it is an error unless --overwrite, which replaces only a batch store (never the
input data, nor anything else). The spec file may also hold an [order] table (Order)
and a [read] table (ReadOptions); flags given here override them. Read the store with
lstm_data.open_batches(OUT), show it with lstm-data inspect OUT.
"""
from __future__ import annotations

import argparse

from lstm_data._util.deprecation import add_renamed_flags
from lstm_data.cli.csv_options import add_csv_arguments, csv_options


def _shuffle(text: str) -> bool | str:
    choices: dict[str, bool | str] = {"auto": "auto", "true": True, "false": False, "block": "block"}
    if text.lower() not in choices:
        raise argparse.ArgumentTypeError(f"expected auto, true, false or block, got {text!r}")
    return choices[text.lower()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True, nargs="+", metavar="PATH",
                        help="input data: files, glob patterns or URLs of any format lstm_data.open reads; "
                             "several paths concatenate")
    parser.add_argument("--spec", required=True, metavar="SPEC.toml", help="BatchSpec TOML file")
    parser.add_argument("--schema", metavar="FILE.toml", default=None,
                        help="declared groups/scalars/dtype for inputs that do not store them (CSV, "
                             "lstm_ee HDF5): e.g. a prong variable that holds at most one value per row")
    add_csv_arguments(parser)
    parser.add_argument("--batch-size", type=int, default=None, metavar="N",
                        help="rows per batch (default: 1024)")
    parser.add_argument("--seed", type=int, default=None, metavar="S",
                        help="seed of the row order, >= 0 (default: 0)")
    parser.add_argument("--shuffle", type=_shuffle, default=None, metavar="{auto,true,false,block}",
                        help="row order; auto (default, as Batches): true for data loaded into RAM (CSV), "
                             "block for on-disk zarr/HDF5, whose random row reads are slow")
    parser.add_argument("--out", required=True, metavar="OUT.zarr", help="store to write")
    parser.add_argument("--threads", dest="threads", type=int, default=1, metavar="N",
                        help="batch-building threads (default: 1)")
    parser.add_argument("--overwrite", dest="overwrite", action="store_true",
                        help="replace a batch store made with other settings or data "
                             "(never anything that is not a batch store)")
    parser.add_argument("--bucket-by", metavar="OUTPUT", default=None,
                        help="length bucketing: batch rows of similar length of this Ragged output "
                             "(each batch padded to its own longest row; see Batches)")
    parser.add_argument("--bucket-window", type=int, default=None, metavar="N",
                        help="with --bucket-by: batches sorted together (default: 64)")
    parser.add_argument("--pad-to-multiple-of", type=int, default=None, metavar="K",
                        help="round per-batch prong widths up to a multiple of K (BatchSpec.pad_to_multiple_of)")
    parser.add_argument("--scheduler", metavar="ADDRESS", default=None,
                        help="build and write batches on a Dask cluster: a scheduler address "
                             "(tcp://host:8786) or local:N for N local worker processes (extra dask); "
                             "the store is bitwise the one written without it")
    parser.add_argument("--compression", choices=("zstd", "none"), default="zstd",
                        help="compression of the stored chunks (default zstd; none: raw chunks, "
                             "checksummed either way)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_renamed_flags(parser, "lstm-data precompute")


def run(args: argparse.Namespace) -> int:
    from lstm_data.batching.order.options import Order
    from lstm_data.batching.spec.batch_spec import BatchSpec
    from lstm_data.io import open as open_dataset
    from lstm_data.io.read_options import ReadOptions
    from lstm_data.store.write import precompute

    # the spec file may hold [order] and [read] tables beside the spec's; flags override them
    spec = BatchSpec.from_toml(args.spec)
    order = Order.from_toml(args.spec)
    read = ReadOptions.from_toml(args.spec)
    flags = {"batch_size": args.batch_size, "seed": args.seed, "shuffle": args.shuffle,
             "bucket_by": args.bucket_by, "bucket_window": args.bucket_window}
    order = order.replace(**{k: v for k, v in flags.items() if v is not None})
    if args.pad_to_multiple_of is not None:
        spec = spec.replace(pad_to_multiple_of=args.pad_to_multiple_of)
    if read.columns is None and read.needed is None:  # read only what the spec (and weights) need
        weights = [order.weights] if isinstance(order.weights, str) else []
        read = read.replace(needed=tuple(spec.variables + weights))
    data = args.data[0] if len(args.data) == 1 else args.data
    dataset = open_dataset(data, schema=args.schema, read=read, **csv_options(args))
    options = dict(threads=args.threads, overwrite=args.overwrite, progress=not (args.no_progress or args.quiet),
                   compression=None if args.compression == "none" else args.compression)
    if args.scheduler is None:
        summary = precompute(dataset, spec, args.out, order, **options)
    else:
        from lstm_data.scale.cluster import connect

        with connect(args.scheduler) as client:
            summary = precompute(dataset, spec, args.out, order, client=client, **options)
    print(summary.table())  # the result goes to stdout, with -q too
    return 0
