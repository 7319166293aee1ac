"""The CSV dialect options every command takes (``--sep``, ``--list-sep``)."""
from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_csv_arguments", "csv_options"]

_NAMED = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "pipe": "|", "space": " "}


def _separator(text: str) -> str:
    """One character, or a name of one (``tab``, ``\\t``, ``semicolon``, ...)."""
    value = _NAMED.get(text.lower(), text)
    if len(value) != 1:
        raise argparse.ArgumentTypeError(
            f"expected one character (or tab, semicolon, comma, pipe), got {text!r}")
    return value


def add_csv_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--sep`` and ``--list-sep`` (used by CSV inputs only)."""
    parser.add_argument("--sep", type=_separator, default=None, metavar="CHAR",
                        help="CSV field separator (default: detected from the header: , ; tab |); "
                             "'tab' or '\\t' for a tab")
    parser.add_argument("--list-sep", type=_separator, default=None, metavar="CHAR",
                        help="separator of the numbers inside a CSV list cell (default ,)")


def csv_options(args: argparse.Namespace) -> dict[str, Any]:
    """The reader keywords the CSV options given on the command line ask for (none when unset)."""
    out = {"sep": getattr(args, "sep", None), "list_sep": getattr(args, "list_sep", None)}
    return {k: v for k, v in out.items() if v is not None}
