"""Write the example files of the documentation into a folder (the docs read examples/... from there).

Examples::

    lstm-data example all examples          # every example, into ./examples
    lstm-data example numu_v3 examples      # the CSV sample and its spec only
    lstm-data example --list

Examples: numu_v3 (numu_v3.csv.xz and the spec numu_v3.toml), nova_sample (NOvA HDF5
tables nova_sample.h5, its schema nova_sample.toml and numu_v3.toml), weaver (jets.root,
which needs uproot and awkward, weaver-core configs and weaver_network.py, a small
network for weaver's --network-config), all. Data files are generated,
seeded, the same bytes every time; a file already there with the same bytes is kept.
"""
from __future__ import annotations

import argparse
import sys

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", nargs="?", default=None, metavar="NAME",
                        help="numu_v3, nova_sample, weaver or all")
    parser.add_argument("folder", nargs="?", default="examples", metavar="DIR",
                        help="where to write the files (default: examples)")
    parser.add_argument("--list", action="store_true", help="list the examples and their files")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace files that are there and differ from the examples")


def run(args: argparse.Namespace) -> int:
    from lstm_data.data.examples import EXAMPLES, example_files, write_examples

    if args.list or args.name is None:
        for name, files in EXAMPLES.items():
            print(f"{name:<12} {', '.join(files)}")
        print(f"{'all':<12} {', '.join(example_files('all'))}")
        return 0 if args.list else 2
    try:
        written = write_examples(args.name, args.folder, overwrite=args.overwrite)
    except ImportError as exc:
        print(f"lstm-data example: error: {exc}", file=sys.stderr)
        return 1
    for path in written:
        print(path)  # the files, on stdout (with -q too)
    return 0
