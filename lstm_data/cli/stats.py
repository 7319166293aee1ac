"""Vectorised per-variable statistics and group multiplicities of a dataset.

Group values stream in row blocks, so an on-disk dataset is never loaded whole.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

from lstm_data.batching.spec.draft import max_len_keeping

if TYPE_CHECKING:
    from lstm_data.data.dataset import Dataset

__all__ = ["VariableStats", "Multiplicity", "variable_stats", "group_stats", "multiplicity",
           "max_len_keeping"]

_BLOCK_BYTES = 64 << 20


@dataclass
class VariableStats:
    """min / max / mean over non-NaN values, NaN count and value count of one variable."""

    name: str
    count: int
    nan: int
    min: float
    max: float
    mean: float


class _Accumulator:
    """Column-wise min/max/sum/NaN counts over blocks ``(n, V)``."""

    def __init__(self, width: int) -> None:
        self.count = 0
        self.nan = np.zeros(width, dtype=np.int64)
        self.min = np.full(width, np.nan)
        self.max = np.full(width, np.nan)
        self.sum = np.zeros(width)

    def add(self, block: np.ndarray) -> None:
        if len(block) == 0:
            return
        block = block.reshape(len(block), -1)
        self.count += len(block)
        isnan = np.isnan(block) if block.dtype.kind == "f" else np.zeros(block.shape, bool)
        self.nan += isnan.sum(axis=0)
        self.min = np.fmin(self.min, np.fmin.reduce(block, axis=0))
        self.max = np.fmax(self.max, np.fmax.reduce(block, axis=0))
        self.sum += np.where(isnan, 0, block).sum(axis=0, dtype=np.float64)

    def result(self, names: list[str]) -> list[VariableStats]:
        valid = self.count - self.nan
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(valid > 0, self.sum / np.maximum(valid, 1), np.nan)
        return [VariableStats(n, self.count, int(self.nan[j]), float(self.min[j]),
                              float(self.max[j]), float(mean[j])) for j, n in enumerate(names)]


def variable_stats(dataset: Dataset) -> list[VariableStats]:
    """Statistics of every scalar column (one vectorised pass per column)."""
    out = []
    for name in dataset.scalar_names:
        acc = _Accumulator(1)
        acc.add(np.asarray(dataset.scalar(name)))
        out.extend(acc.result([name]))
    return out


def group_stats(dataset: Dataset, group: str) -> list[VariableStats]:
    """Statistics of every variable of ``group``, reading values in row blocks."""
    names = dataset.groups[group]
    offsets = dataset.offsets(group)
    n = len(dataset)
    acc = _Accumulator(len(names))
    values_per_row = max(1.0, offsets[-1] / max(n, 1))
    block = max(1, int(_BLOCK_BYTES // (values_per_row * len(names) * 8)))
    for a in range(0, n, block):
        values, _ = dataset.ragged(group, np.arange(a, min(n, a + block), dtype=np.intp))
        acc.add(values)
    return acc.result(names)


@dataclass
class Multiplicity:
    """Per-row lengths of a group, summarised."""

    group: str
    rows: int
    total: int
    mean: float
    zero_rows: int
    quantiles: dict[float, int]
    max: int
    keeps: dict[float, int]


def multiplicity(dataset: Dataset, group: str, *, quantiles: Sequence[float] = (0.5, 0.9, 0.99, 0.999),
                 keeps: Sequence[float] = (0.9, 0.99, 0.999)) -> Multiplicity:
    """Length quantiles of ``group`` and the ``max_len`` that keeps given fractions whole."""
    lengths = np.diff(dataset.offsets(group))
    n = len(lengths)
    return Multiplicity(
        group=group, rows=n, total=int(lengths.sum()),
        mean=float(lengths.mean()) if n else 0.0, zero_rows=int((lengths == 0).sum()),
        quantiles={q: max_len_keeping(lengths, q) for q in quantiles},
        max=int(lengths.max()) if n else 0,
        keeps={f: max_len_keeping(lengths, f) for f in keeps})
