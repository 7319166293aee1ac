"""lstm_ee's data path, rewritten from its documentation, as a benchmark baseline.

lstm_ee kept each prong variable as an object array of per-row float arrays,
deserialised CSV cells with ``[float(y) for y in s.split(',')]``, and joined a
batch with an element loop that reads through Python objects
(``lstm_ee.data.data_generator.funcs.funcs_varr.join_varr_arrays``). These are
here to be measured against, never to be used.
"""
from __future__ import annotations

import numpy as np

__all__ = ["legacy_parse_cell", "legacy_parse_cells", "legacy_join_varr_arrays",
           "to_object_columns"]


def legacy_parse_cell(cell) -> np.ndarray:
    """One CSV cell to a float32 array, as lstm_ee did."""
    if not isinstance(cell, str) or not cell:
        return np.array([], dtype=np.float32)
    return np.array([float(y) for y in cell.split(",")], dtype=np.float32)


def legacy_parse_cells(cells) -> list[np.ndarray]:
    """Every cell of a column, one Python call per cell."""
    return [legacy_parse_cell(c) for c in cells]


def legacy_join_varr_arrays(raw_varr_list, length_limit=None):
    """lstm_ee's join: per variable, per row, per element, through Python objects."""
    if len(raw_varr_list) == 0:
        return None
    n_rows = len(raw_varr_list[0])
    max_len = max((len(x) for x in raw_varr_list[0]), default=0)
    if length_limit is not None:
        max_len = min(max_len, length_limit)
    result = np.full((n_rows, max_len, len(raw_varr_list)), np.nan, dtype=np.float32)
    for var_index, varr in enumerate(raw_varr_list):
        for row in range(n_rows):
            arr = varr[row]
            for j in range(min(len(arr), max_len)):
                result[row, j, var_index] = arr[j]
    return result


def to_object_columns(values: np.ndarray, offsets: np.ndarray) -> list[np.ndarray]:
    """Our interleaved ``(values, offsets)`` as lstm_ee's per-variable object arrays."""
    n_rows = len(offsets) - 1
    columns = []
    for j in range(values.shape[1]):
        col = np.ascontiguousarray(values[:, j])
        obj = np.empty(n_rows, dtype=object)
        obj[:] = np.split(col, offsets[1:-1])
        columns.append(obj)
    return columns
