"""lstm_data: fast padded batches of ragged event data for sequence models.

Public API (design §3)::

    lstm_data.open(path_or_paths, schema=None, **options) -> Dataset
    lstm_data.BatchSpec, Scalars, Ragged, Order, ReadOptions, Batches, open_batches, precompute,
    convert, Schema
    lstm_data.from_arrow, from_awkward
    lstm_data.kernels.parse_float_lists / pad_ragged / BatchGather / CsvBlockParser
    lstm_data.keras.KerasBatches, lstm_data.torch.TorchBatches
    lstm_data.compat.join_varr_arrays

The package is layered along the data flow, each layer importing only from the
layers before it: ``kernels`` -> ``data`` -> ``io`` -> ``batching`` -> ``store``
-> ``adapters`` -> ``cli`` (``errors`` and ``_util`` serve all of them). The
modules ``keras``, ``torch``, ``compat`` and ``synthetic`` at the top are the
public paths of adapters and sample data. Heavy submodules load lazily on first
attribute access.

Diagnostics (the kernel backend chosen, files opened, windows read ahead, a
precomputed store reused, stale temporaries removed) go to the ``lstm_data``
logger, silent by default: ``logging.getLogger("lstm_data").setLevel("INFO")``
plus a handler (or ``lstm-data -v``) shows them. ``warnings`` are kept for what
a user must act on.
"""
from __future__ import annotations

import importlib
import logging
from typing import Any, Callable

logging.getLogger("lstm_data").addHandler(logging.NullHandler())

from lstm_data.data import dataset as _dataset
from lstm_data.errors import BrokenRowsWarning, FormatError, OptionError, ParseError, SchemaError

__version__ = "0.1.0"

_LAZY = {
    "open": ("lstm_data.io.dispatch", "open"),
    "Dataset": ("lstm_data.data.dataset", "Dataset"),
    "InMemoryDataset": ("lstm_data.data.dataset", "InMemoryDataset"),
    "BatchSpec": ("lstm_data.batching.spec", "BatchSpec"),
    "Scalars": ("lstm_data.batching.spec", "Scalars"),
    "Ragged": ("lstm_data.batching.spec", "Ragged"),
    "Batches": ("lstm_data.batching.batches", "Batches"),
    "Order": ("lstm_data.batching.order_options", "Order"),
    "ReadOptions": ("lstm_data.io.read_options", "ReadOptions"),
    "open_batches": ("lstm_data.store.read", "open_batches"),
    "precompute": ("lstm_data.store.write", "precompute"),
    "convert": ("lstm_data.scale.convert", "convert"),
    "Schema": ("lstm_data.io.schema", "Schema"),
    "from_arrow": ("lstm_data.io.parquet", "from_arrow"),
    "from_awkward": ("lstm_data.io.awkward", "from_awkward"),
}
#: submodules reachable as attributes (``lstm_data.kernels`` etc.), imported on first use
_SUBMODULES = ("kernels", "compat", "synthetic", "keras", "torch", "errors",
               "data", "io", "batching", "store", "scale", "adapters", "cli")

__all__ = ["ParseError", "SchemaError", "FormatError", "OptionError", "BrokenRowsWarning", "__version__", *_LAZY]


#: format -> (io module, function) of Dataset.to_<format>
_WRITERS = {
    "zarr": ("lstm_data.io.write", "write_zarr"),
    "hdf5": ("lstm_data.io.write", "write_hdf5"),
    "parquet": ("lstm_data.io.parquet", "write_parquet"),
    "arrow": ("lstm_data.io.parquet", "to_arrow"),
    "awkward": ("lstm_data.io.awkward", "to_awkward"),
}


def _layout_writer(fmt: str) -> Callable[..., Any]:
    """The writer (or converter) for ``fmt``; its io module is imported on first use."""
    module, attr = _WRITERS[fmt]
    return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]


# The package root wires the layers together: Dataset.to_zarr/to_hdf5/to_parquet/to_arrow/
# to_awkward (data layer) use the writers of the io layer above it without importing it.
_dataset.set_writer_source(_layout_writer)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"lstm_data.{name}")
    raise AttributeError(f"module 'lstm_data' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
