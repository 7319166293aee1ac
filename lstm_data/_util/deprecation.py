"""Renamed public names: a warning while the old name works, then an error naming the new one.

A public name (a keyword, an attribute, a command-line flag) that is renamed goes
through two stages (``CHANGELOG.md``, deprecation policy):

1. for one minor release the old name keeps working, with a ``DeprecationWarning``
   naming the new one (:func:`warn_renamed`);
2. for the next one the old name is an error naming the new one, then it goes.

:data:`RENAMED` is the table of the second stage: every old spelling that is now an
error, where it was written and its new spelling. It drives every such error:
:func:`refuses_renamed` for keywords (an :class:`~lstm_data.errors.OptionError`, a
``TypeError`` as Python's own "unexpected keyword argument"), :class:`OldAttribute`
for attributes (an ``AttributeError``) and :func:`add_renamed_flags` for command-line
flags (an ``argparse`` error)::

    precompute() got an unexpected keyword argument 'force': it is now overwrite=...

Stored data is not named here: old spec keys and saved states are migrated on read,
for as long as files of that release exist.
"""
from __future__ import annotations

import argparse
import functools
import inspect
import warnings
from typing import Any, Callable, Mapping, NoReturn, Sequence, TypeVar, overload

from lstm_data.errors import OptionError

__all__ = ["warn_renamed", "RENAMED", "renamed_error", "check_renamed", "refuses_renamed", "OldAttribute",
           "add_renamed_flags"]

F = TypeVar("F", bound=Callable[..., Any])

_THREADS = "threads=... (None: every core, 1: none)"

#: where -> old spelling -> new spelling, of the names renamed before the first release. ``where`` is
#: the function or class (keywords and attributes) or the command (flags); a new spelling is the bare
#: name (shown as ``name=...`` or ``.name``) or written out in full
RENAMED: Mapping[str, Mapping[str, str]] = {
    "lstm_data.open": {"use_threads": _THREADS, "workers": "threads", "block_size": "block_bytes",
                       "step_bytes": "block_bytes"},
    "read_csv": {"block_size": "block_bytes"},
    "read_parquet": {"use_threads": _THREADS},
    "read_root": {"step_bytes": "block_bytes"},
    "convert": {"shuffle": "shuffle_seed"},
    "convert_streaming": {"shuffle": "shuffle_seed"},
    "convert_distributed": {"shuffle": "shuffle_seed"},
    "precompute": {"workers": "threads", "force": "overwrite", "compress": "compression='zstd' or None"},
    "open_batches": {"shuffle": "permute", "batch_size": "order=Order(batch_size=...)",
                     "seed": "order=Order(seed=...)"},
    "PrecomputedBatches": {"shuffle": "permute", "shard_layout": "shard_assignment"},
    "Batches": {"shard_layout": "shard_assignment"},
    "iter": {"workers": "threads"},
    "ShardedBatches": {"batch_size": "batches.batch_size", "shuffle": "batches.shuffle",
                       "nan_to": "batches.nan_to", "seed": "batches.seed", "layout": "assignment"},
    "KerasBatches": {"weights": "sample_weights", "with_weights": "sample_weights", "workers": "threads"},
    "lstm-data convert": {"--shuffle": "--shuffle-seed", "--force": "--overwrite"},
    "lstm-data precompute": {"--workers": "--threads", "--force": "--overwrite",
                             "--no-compress": "--compression none"},
}


def warn_renamed(old: str, new: str, *, stacklevel: int = 2) -> None:
    """Warn that ``old`` is deprecated in favour of ``new`` (a ``DeprecationWarning``).

    The first stage of a rename: the old spelling still works.

    Parameters
    ----------
    old, new
        The spellings as a user writes them (``"open_batches(shuffle=...)"``,
        ``"permute=..."``, ``"--shuffle-seed"``).
    stacklevel
        As :func:`warnings.warn`'s, counted from the caller of this function.
    """
    warnings.warn(f"{old} is deprecated: use {new} (the old spelling is kept one release)", DeprecationWarning,
                  stacklevel=stacklevel + 1)


def _spelled(new: str, kind: str) -> str:
    """``new`` as a user writes it: a bare name as ``name=...`` (keyword) or ``.name`` (attribute)."""
    if not new.replace("_", "").replace(".", "").isalnum():
        return new
    return f"{new}=..." if kind == "keyword" else f".{new}"


def renamed_error(where: str, old: str) -> OptionError:
    """The error for keyword ``old`` of ``where``, renamed to its entry of :data:`RENAMED`.

    Returns
    -------
    OptionError
        ``"where() got an unexpected keyword argument 'old': it is now new=..."``.
    """
    new = _spelled(RENAMED[where][old], "keyword")
    return OptionError(f"{where}() got an unexpected keyword argument {old!r}: it is now {new}")


def check_renamed(where: str, names: Mapping[str, Any] | Sequence[str]) -> None:
    """Raise :func:`renamed_error` for the first of ``names`` that is an old spelling of ``where``.

    Raises
    ------
    OptionError
        One of ``names`` is an old spelling (see :func:`renamed_error`).
    """
    olds = RENAMED[where]
    for name in names:
        if name in olds:
            raise renamed_error(where, name)


def refuses_renamed(where: str) -> Callable[[F], F]:
    """Decorate a function so that its old keywords of :data:`RENAMED` raise :func:`renamed_error`.

    Parameters
    ----------
    where
        The function's key in :data:`RENAMED` (as its errors name it).

    Returns
    -------
    callable
        The decorator. It checks the keywords of each call only when some were given;
        the function's signature is unchanged (``inspect.signature`` reads it).
    """
    olds = RENAMED[where]

    def decorate(function: F) -> F:
        taken = set(olds) & set(inspect.signature(function).parameters)
        if taken:  # a parameter of that name again: the table would hide it
            raise AssertionError(f"{where}: {sorted(taken)} are parameters, not old spellings")

        @functools.wraps(function)
        def checked(*args: Any, **kwargs: Any) -> Any:
            if kwargs:
                check_renamed(where, kwargs)
            return function(*args, **kwargs)

        return checked  # type: ignore[return-value]  # the same signature, as functools.wraps says

    return decorate


class OldAttribute:
    """A class attribute renamed to its entry of :data:`RENAMED`: reading or setting it is an ``AttributeError``.

    ``shuffle = OldAttribute()`` in the body of class ``PrecomputedBatches`` makes
    ``batches.shuffle`` say ``'PrecomputedBatches' object has no attribute 'shuffle': it is
    now .permute``. ``hasattr`` is ``False`` for it, as for any missing attribute.
    """

    def __set_name__(self, owner: type, name: str) -> None:
        self.where, self.old = owner.__name__, name
        self.new = _spelled(RENAMED[self.where][name], "attribute")  # a KeyError here: not in the table

    def _error(self, obj: object) -> AttributeError:
        return AttributeError(f"{self.where!r} object has no attribute {self.old!r}: it is now {self.new}",
                              name=self.old, obj=obj)

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> OldAttribute: ...

    @overload
    def __get__(self, obj: object, owner: type | None = None) -> NoReturn: ...

    def __get__(self, obj: object | None, owner: type | None = None) -> OldAttribute:
        if obj is None:
            return self
        raise self._error(obj)

    def __set__(self, obj: object, value: object) -> NoReturn:
        raise self._error(obj)


class _OldFlag(argparse.Action):
    """An ``argparse`` action for an old flag: the parser's error naming the new flag (hidden from ``--help``)."""

    def __init__(self, option_strings: Sequence[str], dest: str, new: str = "", **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs="?", help=argparse.SUPPRESS, default=argparse.SUPPRESS,
                         **kwargs)
        self.new = new

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        parser.error(f"argument {option_string or self.option_strings[0]}: it is now {self.new}")


def add_renamed_flags(parser: argparse.ArgumentParser, where: str) -> None:
    """Add to ``parser`` the old flags of command ``where``, each an error naming its new flag.

    Parameters
    ----------
    parser
        The command's parser.
    where
        The command as :data:`RENAMED` names it (``"lstm-data convert"``).
    """
    for old, new in RENAMED[where].items():
        parser.add_argument(old, action=_OldFlag, new=new, dest="_old_" + old.lstrip("-").replace("-", "_"))
