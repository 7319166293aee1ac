"""Peer libraries doing our kernels' jobs, measured when installed (the ``bench`` extra).

* pyarrow: ``split_pattern`` of the comma strings, then a cast to ``list<float32>``;
* awkward: ``pad_none`` + ``fill_none`` + ``to_numpy`` of a ragged record array.

Each builder returns a zero-argument callable doing the whole job, or ``None``
when the library is missing.
"""
from __future__ import annotations

import importlib
from typing import Callable

import numpy as np

__all__ = ["pyarrow_parse", "awkward_pad"]


def _optional(name: str):
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def pyarrow_parse(cells: list[str]) -> Callable[[], tuple[np.ndarray, np.ndarray]] | None:
    """pyarrow: strings -> split_pattern -> cast to list<float32> -> (values, offsets)."""
    pa = _optional("pyarrow")
    if pa is None:
        return None
    import pyarrow.compute as pc

    def job():
        strings = pa.array(cells, type=pa.string())
        lists = pc.split_pattern(strings, ",")
        # an empty cell splits into [""], which cannot be cast: make it an empty list first
        lists = pc.if_else(pc.equal(strings, ""), pa.scalar([], type=lists.type), lists)
        floats = lists.cast(pa.list_(pa.float32()))
        return floats.values.to_numpy(zero_copy_only=False), floats.offsets.to_numpy()

    return job


def awkward_pad(values: np.ndarray, offsets: np.ndarray, rows: np.ndarray,
                width: int) -> Callable[[], np.ndarray] | None:
    """awkward: take rows of a ragged record array, pad_none + fill_none(NaN) + to_numpy."""
    ak = _optional("awkward")
    if ak is None:
        return None
    content = ak.contents.ListOffsetArray(ak.index.Index64(offsets.astype(np.int64)),
                                          ak.contents.NumpyArray(values))
    array = ak.Array(content)

    def job():
        picked = array[rows]
        padded = ak.fill_none(ak.pad_none(picked, width, axis=1, clip=True), np.nan)
        return ak.to_numpy(padded)

    return job
