"""lstm_data: fast padded batches of ragged event data for sequence models.

Public API (design §3)::

    lstm_data.open(path_or_paths, schema=None, **options) -> Dataset
    lstm_data.BatchSpec, Scalars, Ragged, Batches, open_batches
    lstm_data.kernels.parse_float_lists / pad_ragged
    lstm_data.compat.join_varr_arrays

Heavy submodules load lazily on first attribute access.
"""
from __future__ import annotations

import importlib
from typing import Any

from .errors import BrokenRowsWarning, FormatError, ParseError, SchemaError

__version__ = "0.1.0"

_LAZY = {
    "open": ("lstm_data.opening", "open"),
    "Dataset": ("lstm_data.dataset", "Dataset"),
    "InMemoryDataset": ("lstm_data.dataset", "InMemoryDataset"),
    "BatchSpec": ("lstm_data.spec", "BatchSpec"),
    "Scalars": ("lstm_data.spec", "Scalars"),
    "Ragged": ("lstm_data.spec", "Ragged"),
    "Batches": ("lstm_data.batches", "Batches"),
    "open_batches": ("lstm_data.precompute", "open_batches"),
}

__all__ = ["ParseError", "SchemaError", "FormatError", "BrokenRowsWarning", "__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    if name in ("kernels", "compat", "synthetic", "keras", "torch", "readers"):
        return importlib.import_module(f"lstm_data.{name}")
    raise AttributeError(f"module 'lstm_data' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
