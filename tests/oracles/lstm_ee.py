"""lstm_ee's data path as a test oracle, transcribed from its documentation (seeds/004).

lstm_ee read the CSV whole, kept each prong cell as text (``"0.2,0.334,0.564"``),
turned a selected cell into ``np.array([float(y) for y in cell.split(',')],
dtype=np.float32)`` at batch time, and joined a batch per variable and per row
into a NaN-padded ``(B, P, V)`` float32 array, ``P`` being the longest row of
the *first* variable capped by ``max_prongs``. Scalars became ``(B, S)``
float32, each target ``(B, 1)``; the weights were ones, one array per target.

Written for clarity, not speed, with Python's ``csv`` module (no pandas), and
independent of the library and of its benchmark baseline
(``bench/legacy*.py``), so neither can drift into agreeing with the other.
"""
from __future__ import annotations

import csv
from typing import Sequence

import numpy as np

__all__ = ["cell_to_float32", "join_varr_arrays", "object_columns", "LstmEeBatches"]


def cell_to_float32(cell: str) -> np.ndarray:
    """A prong cell as lstm_ee saw it: an empty cell is no prong, else one float() per token."""
    if cell.strip() == "":
        return np.zeros(0, dtype=np.float32)
    return np.array([float(token) for token in cell.split(",")], dtype=np.float32)


def join_varr_arrays(raw_varr_list: Sequence[Sequence[np.ndarray]],
                     length_limit: int | None = None) -> np.ndarray | None:
    """lstm_ee's join: ``P`` from the first variable, each row of each variable NaN-padded to ``P``."""
    if not raw_varr_list:
        return None
    width = max((len(row) for row in raw_varr_list[0]), default=0)
    if length_limit is not None:
        width = min(width, length_limit)
    per_variable = []
    for column in raw_varr_list:
        padded = [list(np.asarray(row, dtype=np.float32)[:width]) + [np.nan] * (width - min(len(row), width))
                  for row in column]
        per_variable.append(np.array(padded, dtype=np.float32).reshape(len(column), width))
    return np.stack(per_variable, axis=-1)


def object_columns(values: np.ndarray, offsets: np.ndarray) -> list[np.ndarray]:
    """Interleaved ``(values (total, V), offsets)`` as lstm_ee's per-variable object arrays of rows."""
    columns = []
    for j in range(values.shape[1]):
        column = np.empty(len(offsets) - 1, dtype=object)
        for i in range(len(offsets) - 1):
            column[i] = values[offsets[i]:offsets[i + 1], j]
        columns.append(column)
    return columns


class LstmEeBatches:
    """lstm_ee's ``DataGenerator.get_data`` over a CSV file, for explicit rows."""

    def __init__(self, path: str, *, max_prongs: int | None = None,
                 vars_input_slice: Sequence[str] | None = None,
                 vars_input_png3d: Sequence[str] | None = None,
                 vars_input_png2d: Sequence[str] | None = None,
                 var_target_total: str | None = None, var_target_primary: str | None = None) -> None:
        with open(path, newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader)
            rows = list(reader)
        self.cells = {name: [row[j] for row in rows] for j, name in enumerate(header)}
        self.max_prongs = max_prongs
        self.inputs = {"input_slice": vars_input_slice, "input_png3d": vars_input_png3d,
                       "input_png2d": vars_input_png2d}
        self.targets = {"target_total": var_target_total, "target_primary": var_target_primary}

    def _scalars(self, names: Sequence[str], index: np.ndarray) -> np.ndarray:
        return np.array([[float(self.cells[name][i]) for name in names] for i in index],
                        dtype=np.float32).reshape(len(index), len(names))

    def _prongs(self, names: Sequence[str], index: np.ndarray) -> np.ndarray | None:
        columns = [[cell_to_float32(self.cells[name][i]) for i in index] for name in names]
        return join_varr_arrays(columns, self.max_prongs)

    def get_data(self, index: np.ndarray) -> tuple[dict, dict, list]:
        """``(inputs, targets, [weights per target])`` of rows ``index``, in that order."""
        inputs: dict[str, np.ndarray | None] = {}
        for name, variables in self.inputs.items():
            if variables is not None:
                inputs[name] = (self._scalars(variables, index) if name == "input_slice"
                                else self._prongs(variables, index))
        targets = {name: self._scalars([var], index) for name, var in self.targets.items() if var is not None}
        return inputs, targets, [np.ones(len(index))] * len(targets)
