"""The ``lstm-data`` command line: one subcommand per module in :mod:`lstm_data.cli`.

Each command module defines ``add_arguments(parser)`` and ``run(args) -> int``
and a one-line module docstring used as its help. Modules import lazily, so
``lstm-data --help`` stays fast.
"""
from __future__ import annotations

import argparse
import importlib
import sys

#: subcommand -> module under lstm_data.cli
COMMANDS = {
    "convert": "convert",
    "inspect": "inspect",
    "precompute": "precompute",
    "bench": "bench",
}


def _parser(argv: list[str]) -> tuple[argparse.ArgumentParser, object]:
    parser = argparse.ArgumentParser(prog="lstm-data", description="Ragged event data to padded batches.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = argv[0] if argv and argv[0] in COMMANDS else None
    module = None
    for name, modname in COMMANDS.items():
        if chosen is not None and name != chosen:
            sub.add_parser(name)
            continue
        try:
            mod = importlib.import_module(f"lstm_data.cli.{modname}")
        except ModuleNotFoundError as exc:
            if exc.name != f"lstm_data.cli.{modname}":
                raise
            continue
        p = sub.add_parser(name, help=(mod.__doc__ or "").strip().splitlines()[0],
                           description=mod.__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.add_arguments(p)
        if name == chosen:
            module = mod
    return parser, module


def main(argv: list[str] | None = None) -> int:
    """Run ``lstm-data`` with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser, module = _parser(argv)
    args = parser.parse_args(argv)
    if module is None:
        parser.print_help()
        return 2
    try:
        return int(module.run(args) or 0)
    except (ValueError, OSError) as exc:  # user-facing errors: no traceback
        print(f"lstm-data {args.command}: error: {exc}", file=sys.stderr)
        return 1
