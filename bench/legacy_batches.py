"""An lstm_ee-style batch path, written from lstm_ee's documentation, as a benchmark baseline.

What lstm_ee did (its "Data Handling" notes, seeds/004): the CSV is read whole
into a ``pandas.DataFrame`` whose prong cells stay text (``"0.2,0.334,0.564"``);
at batch time each selected cell is deserialised in Python
(``[float(y) for y in cell.split(',')]`` to float32); then, per variable and per
row, the arrays are joined into a NaN-padded ``(B, P, V)`` float32 array whose
``P`` is the batch's longest row of the first variable, capped by ``max_prongs``.
Scalars become ``(B, S)`` float32, each target ``(B, 1)``; weights are ones per
target.

This module is a baseline to measure against, never used by the package (the parity tests
have an oracle of their own, tests/oracles/lstm_ee.py).
pandas is a bench/test-only dependency, imported when a loader is made.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from bench.legacy import legacy_join_varr_arrays

__all__ = ["LegacyCSVLoader", "LegacyGenerator"]


def _cell_to_array(cell) -> np.ndarray:
    """One CSV cell to float32, as lstm_ee: empty/missing -> [], text -> per-token float()."""
    if cell is None or (isinstance(cell, float) and math.isnan(cell)):
        return np.empty((0,), dtype=np.float32)
    if isinstance(cell, str):
        return np.array([float(y) for y in cell.split(",")], dtype=np.float32)
    return np.array([cell], dtype=np.float32)


class LegacyCSVLoader:
    """A DataFrame of the whole CSV; prong columns are deserialised per cell on every ``get``."""

    def __init__(self, path: str) -> None:
        import pandas as pd

        self._pd = pd
        self.df = pd.read_csv(path)

    def __len__(self) -> int:
        return len(self.df)

    def get(self, var: str, index: np.ndarray) -> np.ndarray:
        """Values of ``var`` at rows ``index``: a numeric array, or an object array of float32 arrays."""
        s = self.df.loc[index, var]
        if self._pd.api.types.is_numeric_dtype(s.dtype):
            return s.values
        return s.apply(_cell_to_array).values


class LegacyGenerator:
    """lstm_ee's ``DataGenerator.get_data`` for explicit rows (per-variable join loop)."""

    def __init__(self, loader: LegacyCSVLoader, *, max_prongs: int | None = None,
                 vars_input_slice: Sequence[str] | None = None,
                 vars_input_png3d: Sequence[str] | None = None,
                 vars_input_png2d: Sequence[str] | None = None,
                 var_target_total: str | None = None, var_target_primary: str | None = None) -> None:
        self.loader = loader
        self.max_prongs = max_prongs
        self.slice = vars_input_slice
        self.png3d = vars_input_png3d
        self.png2d = vars_input_png2d
        self.total = var_target_total
        self.primary = var_target_primary

    def _scalars(self, variables: Sequence[str], index: np.ndarray) -> np.ndarray:
        result = np.empty((len(index), len(variables)), dtype=np.float32)
        for j, name in enumerate(variables):
            result[:, j] = self.loader.get(name, index)
        return result

    def _join(self, variables: Sequence[str], index: np.ndarray) -> np.ndarray:
        columns = [self.loader.get(v, index) for v in variables]
        return legacy_join_varr_arrays(columns, self.max_prongs)

    def get_data(self, index: np.ndarray) -> tuple[dict, dict, list]:
        """``(inputs, targets, [weights per target])`` of rows ``index``, in that order."""
        index = np.asarray(index)
        inputs, targets = {}, {}
        if self.slice is not None:
            inputs["input_slice"] = self._scalars(self.slice, index)
        if self.png3d is not None:
            inputs["input_png3d"] = self._join(self.png3d, index)
        if self.png2d is not None:
            inputs["input_png2d"] = self._join(self.png2d, index)
        if self.total is not None:
            targets["target_total"] = self._scalars([self.total], index)
        if self.primary is not None:
            targets["target_primary"] = self._scalars([self.primary], index)
        return inputs, targets, [np.ones(len(index))] * len(targets)
