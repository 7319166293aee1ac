"""The ``lstm-data`` command line: one subcommand per module in :mod:`lstm_data.cli`.

Each command module defines ``add_arguments(parser)`` and ``run(args) -> int``
and a one-line module docstring used as its help; one that sets
``TAKES_OTHER_ARGUMENTS = True`` gets the arguments it does not know in
``args.other`` (for the program it runs) instead of an error. Modules import lazily, so
``lstm-data --help`` stays fast. Every command takes, before or after its name,
``-q/--quiet`` (no progress bars, no messages on stderr; results still go to
stdout) and ``-v/--verbose`` (the
``lstm_data`` logger's diagnostics on stderr; ``-vv`` for debug detail);
``lstm-data --version`` names the version and the kernel backend.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
import warnings
from types import ModuleType

from lstm_data.cli.help_text import close_matches, plain_text
from lstm_data.errors import MissingExtraError, PrecisionWarning

#: subcommand -> module under lstm_data.cli
COMMANDS = {
    "convert": "convert",
    "inspect": "inspect",
    "precompute": "precompute",
    "fit": "fit",
    "bench": "bench",
    "example": "example",
    "weaver": "weaver",
    "predict": "predict",
}


class _Version(argparse.Action):
    """``--version``: the package version and the kernel backend (imported only when asked)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest=dest, nargs=0, default=argparse.SUPPRESS,
                         help="print the version and the kernel backend, then exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        import lstm_data
        from lstm_data import kernels
        print(f"lstm-data {lstm_data.__version__} (kernels: {kernels.BACKEND}; "
              f"Python {sys.version.split()[0]})")  # on stdout, as --version conventionally is
        parser.exit()


def _common_options() -> argparse.ArgumentParser:
    """The options every command takes."""
    common = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    common.add_argument("-q", "--quiet", action="store_true",
                        help="no progress bars and no messages on stderr (errors excepted)")
    common.add_argument("-v", "--verbose", action="count", default=0,
                        help="log diagnostics to stderr (files opened, backend, reuse); -vv: debug detail")
    common.add_argument("--strict-integers", action="store_true",
                        help="stop with an error at the first integer a float dtype would change "
                             "(default: warn once per column)")
    return common


def _stderr_handler(fmt: str) -> logging.Handler:
    handler = logging.StreamHandler(sys.stderr)
    setattr(handler, "lstm_data_cli", True)  # the mark _remove_handlers looks for
    handler.setFormatter(logging.Formatter(fmt))
    return handler


def _remove_handlers() -> None:
    """Take this command's stderr handlers off the loggers (main() may run again in-process)."""
    for name in ("lstm_data", "lstm_data.cleanup"):
        logger = logging.getLogger(name)
        for handler in [h for h in logger.handlers if getattr(h, "lstm_data_cli", False)]:
            logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)


def _configure_logging(args: argparse.Namespace) -> None:
    """Route the ``lstm_data`` loggers to stderr for this command.

    ``-v``: every diagnostic (``-vv``: debug detail). By default only what was done
    for the user without being asked (``lstm_data.cleanup``: stale temporaries
    removed). ``--quiet``: nothing.
    """
    _remove_handlers()
    if args.quiet:
        return
    if args.verbose:
        logger = logging.getLogger("lstm_data")
        logger.addHandler(_stderr_handler("lstm-data: %(levelname)s: %(message)s"))
        logger.setLevel(logging.INFO if args.verbose == 1 else logging.DEBUG)
        return
    cleanup = logging.getLogger("lstm_data.cleanup")
    cleanup.addHandler(_stderr_handler(f"lstm-data {args.command}: %(message)s"))
    cleanup.setLevel(logging.INFO)
    cleanup.propagate = True


def _parser(argv: list[str]) -> tuple[argparse.ArgumentParser, ModuleType | None,
                                      argparse.ArgumentParser | None]:
    """The ``lstm-data`` parser, the chosen command's module and its parser (``None``: no command)."""
    common = _common_options()
    parser = argparse.ArgumentParser(prog="lstm-data", description="Ragged event data to padded batches.",
                                     parents=[common], allow_abbrev=False,
                                     epilog="Options -q, -v and --strict-integers go before or after the "
                                            "command. 'lstm-data COMMAND --help' shows a command's options.")
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = argv[0] if argv and argv[0] in COMMANDS else None
    module, chosen_parser = None, None
    for name, modname in COMMANDS.items():
        if chosen is not None and name != chosen:
            sub.add_parser(name, allow_abbrev=False)
            continue
        try:
            mod = importlib.import_module(f"lstm_data.cli.{modname}")
        except ModuleNotFoundError as exc:
            if exc.name != f"lstm_data.cli.{modname}":
                raise
            continue
        doc = plain_text(mod.__doc__ or "").strip()
        p = sub.add_parser(name, help=doc.splitlines()[0], description=doc, parents=[common],
                           formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
        mod.add_arguments(p)
        if name == chosen:
            module, chosen_parser = mod, p
    return parser, module, chosen_parser


def _unrecognized(parser: argparse.ArgumentParser, extra: list[str]) -> str:
    """The error for arguments ``parser`` does not take, with the close matches of its options."""
    options = [s for action in parser._actions for s in action.option_strings if s.startswith("--")]
    hints = []
    for arg in extra:
        flag = arg.split("=", 1)[0]
        if flag.startswith("-") and flag not in options:
            close = close_matches(flag, options, n=2)
            if close:
                hints.append(f"{flag}: did you mean {' or '.join(close)}?")
    return f"unrecognized arguments: {' '.join(extra)}" + (f" ({'; '.join(hints)})" if hints else "")


def _unknown_command(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """Exit with the close match when the first word is no command (nor an option)."""
    first = next((a for a in argv if not a.startswith("-")), None)
    if first is None or first in COMMANDS or argv[:1] == ["--version"]:
        return
    close = close_matches(first, COMMANDS, n=2)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    parser.error(f"unknown command {first!r} (commands: {', '.join(COMMANDS)}){hint}")


#: the endings of an argument's metavar that make it an input file read whole (a spec, a schema);
#: a metavar starting with OUT names a file written (``--draft-spec OUT.toml``), which need not exist
_INPUT_FILES = (".toml", ".yaml", ".yml")


def _input_file_problems(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """What is wrong with the spec and schema files given (``--spec: no such file 'x.toml'; did you
    mean 'y.toml'?``, a directory): every argument whose metavar names a ``.toml`` or ``.yaml`` file."""
    from lstm_data._util.paths import not_a_file

    problems = []
    for action in parser._actions:
        metavar = action.metavar if isinstance(action.metavar, str) else ""
        value = getattr(args, action.dest, None)
        if (not metavar.lower().endswith(_INPUT_FILES) or metavar.upper().startswith("OUT")
                or not isinstance(value, str) or "://" in value):
            continue
        problem = not_a_file(value)
        if problem is not None:
            problems.append(f"{action.option_strings[0] if action.option_strings else metavar}: {problem}")
    return problems


#: options every command takes, also accepted before the command (``lstm-data -v inspect x``)
_COMMON = ("-q", "--quiet", "-v", "-vv", "-vvv", "--verbose", "--strict-integers")


def _common_first(argv: list[str]) -> list[str]:
    """``argv`` with the common options given before the command moved after it."""
    lead = 0
    while lead < len(argv) and argv[lead] in _COMMON:
        lead += 1
    if lead and lead < len(argv) and argv[lead] in COMMANDS:
        return [argv[lead], *argv[:lead], *argv[lead + 1:]]
    return argv


def main(argv: list[str] | None = None) -> int:
    """Run ``lstm-data`` with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    argv = _common_first(list(sys.argv[1:] if argv is None else argv))
    parser, module, chosen = _parser(argv)
    if chosen is None and not {"-h", "--help", "--version"} & set(argv):
        _unknown_command(parser, argv)
    args, extra = parser.parse_known_args(argv)
    if getattr(module, "TAKES_OTHER_ARGUMENTS", False):  # handed on as given (lstm-data weaver ...)
        args.other, extra = extra, []
    if extra:  # the command's own usage and the close matches of its options
        (chosen or parser).error(_unrecognized(chosen or parser, extra))
    if module is None:
        parser.print_help()
        return 2
    problems = _input_file_problems(chosen, args) if chosen is not None else []
    if problems:  # before any work: a mistyped spec or schema file, with the close names beside it
        for problem in problems:
            print(f"lstm-data {args.command}: error: {problem}", file=sys.stderr)
        return 1
    _configure_logging(args)
    try:
        with warnings.catch_warnings():
            if args.strict_integers:
                warnings.simplefilter("error", PrecisionWarning)
            return int(module.run(args) or 0)
    except BrokenPipeError:  # the reader of stdout left (lstm-data ... | head): stop quietly
        return _stdout_closed()
    except MissingExtraError as exc:  # an optional dependency: one line naming the extra to install
        print(f"lstm-data {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, OSError, PrecisionWarning) as exc:  # user-facing: no traceback, no credentials
        from lstm_data.errors import redact

        print(f"lstm-data {args.command}: error: {redact(exc)}", file=sys.stderr)
        return 1
    finally:
        _remove_handlers()


#: the exit status of a command whose stdout was closed under it (128 + SIGPIPE, as a shell reports)
EXIT_BROKEN_PIPE = 141


def _stdout_closed() -> int:
    """Point stdout at the null device (Python's flush at exit would fail again) and return
    :data:`EXIT_BROKEN_PIPE`: the reader of the output left (``| head``), nothing to report."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout replaced by an object without a file descriptor
        pass
    return EXIT_BROKEN_PIPE
