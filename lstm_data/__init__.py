"""lstm_data: fast padded batches of ragged event data for sequence models.

Open data with :func:`lstm_data.open` (CSV, HDF5, Parquet, ROOT, zarr; one file
or many), describe what a batch looks like with a :class:`BatchSpec` of
:class:`Scalars` and :class:`Ragged` fields, how rows are ordered with an
:class:`Order`, and get ``(inputs, targets, weights)`` dicts of numpy arrays from
:class:`Batches`. :mod:`lstm_data.keras` and :mod:`lstm_data.torch` adapt them to
Keras 3 and torch; :func:`precompute` stores an epoch of batches and
:func:`open_batches` reads it back.

Example
-------
>>> import lstm_data                                                  # doctest: +SKIP
>>> ds = lstm_data.open("examples/numu_v3.csv.xz")                    # doctest: +SKIP
>>> spec = lstm_data.BatchSpec.from_toml("examples/numu_v3.toml")     # doctest: +SKIP
>>> inputs, targets, weights = lstm_data.Batches(ds, spec, lstm_data.Order(batch_size=256))[0]  # doctest: +SKIP

Diagnostics (the kernel backend chosen, files opened, windows read ahead, a
precomputed store reused, stale temporaries removed) go to the ``lstm_data``
logger, silent by default: ``logging.getLogger("lstm_data").setLevel("INFO")``
plus a handler (or ``lstm-data -v``) shows them. ``warnings`` are kept for what
a user must act on.
"""
from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any, Callable

logging.getLogger("lstm_data").addHandler(logging.NullHandler())

from lstm_data.data import dataset as _dataset
from lstm_data.errors import (
    BrokenRowsWarning,
    FormatError,
    MissingExtraError,
    OptionError,
    ParseError,
    PrecisionWarning,
    SpecVersionWarning,
    RemoteError,
    SchemaError,
    UncheckedStoreWarning,
)

__version__ = "0.1.0"

if TYPE_CHECKING:  # the real names for type checkers and editors (imported lazily at run time;
    # ``X as X`` exports them: ``__all__`` is built from _LAZY, which a type checker does not read)
    from lstm_data.batching.epochs.batches import Batches as Batches
    from lstm_data.batching.epochs.source import BatchSource as BatchSource
    from lstm_data.batching.order.options import Order as Order
    from lstm_data.batching.spec.fields import Standardize as Standardize
    from lstm_data.batching.spec.draft import auto_standardize as auto_standardize, draft_spec as draft_spec
    from lstm_data.batching.spec.batch_spec import BatchSpec as BatchSpec, Ragged as Ragged, Scalars as Scalars
    from lstm_data.data.dataset import Dataset as Dataset, InMemoryDataset as InMemoryDataset
    from lstm_data.io.awkward import from_awkward as from_awkward
    from lstm_data.io.dispatch import open as open
    from lstm_data.io.parquet import from_arrow as from_arrow
    from lstm_data.io.read_options import ReadOptions as ReadOptions
    from lstm_data.io.schema import Schema as Schema
    from lstm_data.scale.convert import convert as convert
    from lstm_data.store.read import open_batches as open_batches
    from lstm_data.store.write import precompute as precompute
    from lstm_data.scoring.run import predict as predict
    from lstm_data.scoring.options import PredictOptions as PredictOptions

#: module -> the public names the package root imports from it on first use
_LAZY_MODULES = {
    "lstm_data.io.dispatch": ("open",),
    "lstm_data.data.dataset": ("Dataset", "InMemoryDataset"),
    "lstm_data.batching.spec.batch_spec": ("BatchSpec", "Scalars", "Ragged"),
    "lstm_data.batching.spec.fields": ("Standardize",),
    "lstm_data.batching.spec.draft": ("draft_spec", "auto_standardize"),
    "lstm_data.batching.epochs.batches": ("Batches",),
    "lstm_data.batching.epochs.source": ("BatchSource",),
    "lstm_data.batching.order.options": ("Order",),
    "lstm_data.io.read_options": ("ReadOptions",),
    "lstm_data.store.read": ("open_batches",),
    "lstm_data.store.write": ("precompute",),
    "lstm_data.scale.convert": ("convert",),
    "lstm_data.io.schema": ("Schema",),
    "lstm_data.io.parquet": ("from_arrow",),
    "lstm_data.io.awkward": ("from_awkward",),
    "lstm_data.scoring.run": ("predict",),
    "lstm_data.scoring.options": ("PredictOptions",),
}
#: public name -> the module its lazy import finds it in
_LAZY = {name: module for module, names in _LAZY_MODULES.items() for name in names}
#: submodules reachable as attributes (``lstm_data.kernels`` etc.), imported on first use
_SUBMODULES = ("kernels", "compat", "synthetic", "keras", "torch", "errors",
               "data", "io", "batching", "store", "scale", "adapters", "cli")

__all__ = ["ParseError", "SchemaError", "FormatError", "OptionError", "RemoteError", "MissingExtraError",
           "BrokenRowsWarning", "PrecisionWarning", "SpecVersionWarning", "UncheckedStoreWarning", "__version__",
           *_LAZY]


#: format -> (io module, function) of Dataset.to_<format>
_WRITERS = {
    "zarr": ("lstm_data.io.ours.write", "write_zarr"),
    "hdf5": ("lstm_data.io.ours.write", "write_hdf5"),
    "parquet": ("lstm_data.io.parquet", "write_parquet"),
    "arrow": ("lstm_data.io.parquet", "to_arrow"),
    "awkward": ("lstm_data.io.awkward", "to_awkward"),
}


def _layout_writer(fmt: str) -> Callable[..., Any]:
    """The writer (or converter) for ``fmt``; its io module is imported on first use."""
    module, attr = _WRITERS[fmt]
    writer: Callable[..., Any] = getattr(importlib.import_module(module), attr)
    return writer


# The package root wires the layers together: Dataset.to_zarr/to_hdf5/to_parquet/to_arrow/
# to_awkward (data layer) use the writers of the io layer above it without importing it.
_dataset.set_writer_source(_layout_writer)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"lstm_data.{name}")
    raise AttributeError(f"module 'lstm_data' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(__all__) | {"kernels", "keras", "torch", "compat", "synthetic"})
