"""The kernel backend: compiled Cython core or its pure-Python twin.

Everything above this module reaches compiled code only through here.

Attributes
----------
BACKEND : str
    ``"cython"`` when the compiled core is in use, ``"python"`` otherwise.
    ``LSTM_DATA_PURE_PYTHON=1`` in the environment forces ``"python"``.
"""
from __future__ import annotations

import os
import warnings

__all__ = ["BACKEND", "parse_float_lists", "pad_ragged", "BatchGather", "CsvBlockParser",
           "KERNEL_NAMES", "load_backend"]

#: Names every backend must provide, with the same signatures.
KERNEL_NAMES = ("parse_float_lists", "pad_ragged", "BatchGather", "CsvBlockParser")


def _pure_requested() -> bool:
    return os.environ.get("LSTM_DATA_PURE_PYTHON", "") not in ("", "0")


def load_backend(name: str):
    """Return a namespace with every kernel of backend ``name`` ("cython" or "python").

    Raises
    ------
    ImportError
        When ``name == "cython"`` and the compiled core is not built.
    """
    import types

    if name == "python":
        from . import _fallback as mod
    elif name == "cython":
        from ._ext import _all as mod  # type: ignore[attr-defined]
    else:
        raise ValueError(f"unknown backend {name!r}; expected 'cython' or 'python'")
    ns = types.SimpleNamespace(BACKEND=name)
    for kernel in KERNEL_NAMES:
        setattr(ns, kernel, getattr(mod, kernel))
    return ns


def _choose():
    if _pure_requested():
        return load_backend("python")
    try:
        return load_backend("cython")
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


_backend = _choose()
BACKEND: str = _backend.BACKEND
parse_float_lists = _backend.parse_float_lists
pad_ragged = _backend.pad_ragged
BatchGather = _backend.BatchGather
CsvBlockParser = _backend.CsvBlockParser
