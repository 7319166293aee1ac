"""Score every selected row of the data with a trained model and write the scores beside the inputs.

Example::

    lstm-data predict --model model.keras --data 'test/*.parquet' --spec spec.toml \\
        --out scores/ --batch-size 512 --observers jet_pt jet_eta --selected mark

The model is a Keras .keras file, a TorchScript or torch.export .pt2 file, or
module:factory with --state-dict (the module is imported because you name it here).
Each input file gets an output of its own format (or --format) holding file_index,
entry, the score_* columns and the observers, aligned with it row for row. A run
stopped halfway continues from its last flushed chunk when run again. The spec file
may hold a [predict] table (PredictOptions); flags given here override it.
"""
from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, metavar="MODEL",
                        help="a .keras file, a TorchScript or .pt2 file, or module:factory")
    parser.add_argument("--state-dict", default=None, metavar="FILE", help="torch state dict of module:factory")
    parser.add_argument("--data", required=True, nargs="+", metavar="PATH", help="input files or glob patterns")
    parser.add_argument("--spec", required=True, metavar="SPEC.toml", help="the BatchSpec the model was trained with")
    parser.add_argument("--out", default=None, metavar="DIR", help="output directory (default: beside each input)")
    parser.add_argument("--observers", nargs="*", default=(), metavar="COLUMN",
                        help="scalar columns copied beside the scores")
    parser.add_argument("--batch-size", type=int, default=None, metavar="N")
    parser.add_argument("--format", dest="output_format", default=None,
                        choices=("same", "parquet", "root", "hdf5", "csv", "zarr"))
    parser.add_argument("--selected", default=None, choices=("drop", "mark"),
                        help="rows the selection removes: left out (drop) or kept with NaN scores (mark)")
    parser.add_argument("--threads", type=int, default=None, metavar="N", help="batch-building threads")
    parser.add_argument("--rank", type=int, default=None, metavar="R")
    parser.add_argument("--world-size", type=int, default=None, metavar="W")
    parser.add_argument("--restart", action="store_true", help="do not resume a stopped run; start afresh")
    parser.add_argument("--overwrite", action="store_true", help="replace existing outputs (never an input)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from lstm_data.scoring.options import PredictOptions, spec_file
    from lstm_data.scoring.run import predict

    options = PredictOptions.from_toml(args.spec)
    flags = {"batch_size": args.batch_size, "output_format": args.output_format, "selected": args.selected,
             "threads": args.threads, "rank": args.rank, "world_size": args.world_size}
    changes = {k: v for k, v in flags.items() if v is not None}
    if args.restart:
        changes["resume"] = False
    if args.overwrite:
        changes["overwrite"] = True
    changes["progress"] = not (args.no_progress or args.quiet)
    options = options.replace(**changes)
    written = predict(args.model, list(args.data), spec_file(args.spec), args.out,
                      observers=args.observers, options=options, state_dict=args.state_dict)
    for path in written:
        print(path)
    return 0
