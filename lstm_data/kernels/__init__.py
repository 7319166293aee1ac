"""The kernel backend: compiled Cython core or its pure-Python twin.

Everything above this package reaches compiled code only through here: the
compiled modules live in ``kernels/_ext``, their readable twins (the
specification) in ``kernels/_py``, and the argument checks both share in
``kernels/_args``. The compiled code never imports the twins.

Attributes
----------
BACKEND : str
    ``"cython"`` when the compiled core is in use, ``"python"`` otherwise.
    ``LSTM_DATA_PURE_PYTHON=1`` in the environment forces ``"python"``.
QUOTED, MULTI, BARE : int
    Column flags of :meth:`CsvBlockParser.column_flags`: some cell of the column
    was quoted; some cell held two or more tokens; some unquoted cell held a number.
INEXACT, LISTED : int
    More column flags: some integer token is not held exactly by the float dtype;
    some cell was a bracketed list.
KERNEL_LAYOUTS : tuple of str
    The output layouts of a ragged job, a layout's code being its index: ``"padded"``
    ``(B, P, V)``, ``"channels_first"`` ``(B, V, P)``, ``"packed"`` ``(T, V)``.
RaggedJob, RaggedSource, ragged_job
    The typed job of one ragged output of ``BatchGather``, made checked by ``ragged_job``
    from typed arguments (``BatchGather`` also takes its public mapping of them).
INFLATED, NOT_ZLIB, inflate_message
    Results of ``inflate_baskets``: every basket inflated; a block of another algorithm
    (the caller inflates that basket); the words for any other result.
"""
from __future__ import annotations

import logging
import os
import types
import warnings
from typing import TYPE_CHECKING

from lstm_data.kernels._args import BARE, MULTI, QUOTED, long_line_message
from lstm_data.kernels._csv_flags import INEXACT, LISTED
from lstm_data.kernels._inflate_args import INFLATED, NOT_ZLIB, inflate_message
from lstm_data.kernels._job import RaggedJob, RaggedSource
from lstm_data.kernels._layouts import KERNEL_LAYOUTS
from lstm_data.kernels._ragged import ragged_job

__all__ = ["BACKEND", "parse_float_lists", "pad_ragged", "BatchGather", "CsvBlockParser",
           "interleave_columns", "inflate_baskets", "KERNEL_NAMES", "load_backend", "QUOTED", "MULTI", "BARE",
           "INEXACT", "LISTED", "long_line_message", "KERNEL_LAYOUTS",
           "RaggedJob", "RaggedSource", "ragged_job", "INFLATED", "NOT_ZLIB", "inflate_message"]

#: Names every backend must provide, with the same signatures.
KERNEL_NAMES = ("parse_float_lists", "pad_ragged", "BatchGather", "CsvBlockParser", "interleave_columns",
                "inflate_baskets")


def _pure_requested() -> bool:
    return os.environ.get("LSTM_DATA_PURE_PYTHON", "") not in ("", "0")


def load_backend(name: str) -> types.SimpleNamespace:
    """Return a namespace with every kernel of backend ``name`` ("cython" or "python").

    Parameters
    ----------
    name
        ``"cython"`` (the compiled core) or ``"python"`` (the pure-Python twins).

    Returns
    -------
    types.SimpleNamespace
        ``BACKEND`` (the name) and one attribute per kernel of ``KERNEL_NAMES``.

    Raises
    ------
    ImportError
        When ``name == "cython"`` and the compiled core is not built.
    ValueError
        For any other name.
    """
    mod: types.ModuleType
    if name == "python":
        from lstm_data.kernels import _py as mod
    elif name == "cython":
        from lstm_data.kernels._ext import _all as mod
    else:
        raise ValueError(f"unknown backend {name!r}; expected 'cython' or 'python'")
    ns = types.SimpleNamespace(BACKEND=name)
    for kernel in KERNEL_NAMES:
        setattr(ns, kernel, getattr(mod, kernel))
    return ns


def _choose() -> types.SimpleNamespace:
    if _pure_requested():
        _log.info("kernels: pure-Python twins (LSTM_DATA_PURE_PYTHON is set)")
        return load_backend("python")
    try:
        backend = load_backend("cython")
        _log.info("kernels: compiled (Cython) core")
        return backend
    except ImportError as exc:
        if os.environ.get("LSTM_DATA_REQUIRE_EXTENSION", "") not in ("", "0"):
            raise
        warnings.warn(
            f"lstm_data: compiled core unavailable ({exc}); using the pure-Python twins, "
            "which are much slower. Reinstall with a C compiler to build it.",
            RuntimeWarning,
            stacklevel=3,
        )
        return load_backend("python")


_log = logging.getLogger("lstm_data")
_backend = _choose()
BACKEND: str = _backend.BACKEND

if TYPE_CHECKING:
    # Type checkers and editors see the twins: same names, signatures and docstrings as the
    # compiled kernels (the stubs in _ext/*.pyi say the same for the compiled modules).
    from lstm_data.kernels._py import (
        BatchGather,
        CsvBlockParser,
        inflate_baskets,
        interleave_columns,
        pad_ragged,
        parse_float_lists,
    )
else:
    parse_float_lists = _backend.parse_float_lists
    pad_ragged = _backend.pad_ragged
    BatchGather = _backend.BatchGather
    CsvBlockParser = _backend.CsvBlockParser
    interleave_columns = _backend.interleave_columns
    inflate_baskets = _backend.inflate_baskets
