"""The precomputed-batch store: its metadata, the data fingerprint and the reuse check.

A store is a zarr v3 group. Each output (flat name, see :meth:`BatchSpec.flat_names`)
is a 1-D array holding every batch's values one after another; the group
``_index`` holds, per output, ``<name>.offsets`` (n_batches + 1) and
``<name>.shapes`` (n_batches, ndim), so batch ``i`` is
``array[offsets[i]:offsets[i + 1]].reshape(shapes[i])``: exact, with no padding
beyond the batch's own. The root attribute ``lstm_data_batches`` records the spec,
batch size, seed, shuffle mode, number of batches and rows, and a fingerprint of
the source data.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping

import numpy as np

from .dataset import Dataset

__all__ = ["STORE_FORMAT", "STORE_VERSION", "ATTR", "fingerprint", "StoreMismatchError",
           "compare_metadata"]

STORE_FORMAT = "lstm_data.batches"
STORE_VERSION = 1
#: root attribute holding the metadata mapping
ATTR = "lstm_data_batches"
#: rows whose ragged values are hashed (evenly spaced), besides all scalars and offsets
_SAMPLE_ROWS = 4096


class StoreMismatchError(ValueError):
    """A precomputed store was made with other settings or other data than those asked for."""


def fingerprint(dataset: Dataset) -> str:
    """A content hash of ``dataset``: schema, every scalar, every offsets array, and sampled values.

    Scalars and offsets are in RAM for every reader, so they are hashed whole; the
    ragged values of ``_SAMPLE_ROWS`` evenly spaced rows are hashed too (reading only
    their chunks on disk). Any change of row count, schema, scalar value or prong
    count changes the fingerprint, and so does almost any change of prong values.
    """
    h = hashlib.blake2b(digest_size=16)
    n = len(dataset)
    h.update(json.dumps({"n_rows": n, "scalars": dataset.scalar_names, "groups": dataset.groups}).encode())
    for name in dataset.scalar_names:
        h.update(np.ascontiguousarray(dataset.scalar(name)).tobytes())
    sample = np.unique(np.linspace(0, n - 1, min(n, _SAMPLE_ROWS)).astype(np.intp)) if n else \
        np.zeros(0, dtype=np.intp)
    for group in dataset.groups:
        offsets = dataset.offsets(group) if hasattr(dataset, "offsets") else dataset.ragged(group)[1]
        h.update(np.ascontiguousarray(offsets, dtype=np.int64).tobytes())
        values, _ = dataset.ragged(group, sample)
        h.update(np.ascontiguousarray(values).tobytes())
    return h.hexdigest()


def compare_metadata(recorded: Mapping[str, Any], expected: Mapping[str, Any], *, where: str) -> None:
    """Raise :class:`StoreMismatchError` naming every key whose recorded value differs.

    Only keys present (and not ``None``) in ``expected`` are checked.
    """
    diffs = []
    for key, want in expected.items():
        if want is None:
            continue
        have = recorded.get(key)
        if have != want:
            shown_have = "<different spec>" if key == "spec" else repr(have)
            shown_want = "<this spec>" if key == "spec" else repr(want)
            diffs.append(f"{key}: store has {shown_have}, asked for {shown_want}")
    if diffs:
        raise StoreMismatchError(f"{where} was precomputed with other settings or data; refusing to "
                                 f"reuse it ({'; '.join(diffs)}). Recompute it (precompute --force) "
                                 "or point to another output.")
