"""A dataset whose rows say who they are, for checking which rows each training step saw."""
from __future__ import annotations

import numpy as np

from lstm_data import BatchSpec, Ragged, Scalars
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.data.synthetic import PNG3D_VARS, make_dataset

#: the input holding each row's index (float32: exact below 2**24)
ROW = "input_row"


def row_dataset(n: int, seed: int = 3) -> InMemoryDataset:
    """The synthetic dataset of ``n`` rows plus a scalar ``row`` = 0 .. n - 1."""
    base = make_dataset(n, seed=seed)
    scalars = {name: base.scalar(name) for name in base.scalar_names}
    scalars["row"] = np.arange(n, dtype=np.float32)
    return InMemoryDataset(scalars, {g: base.group(g) for g in base.groups})


def row_spec(pad_value: float = 0.0) -> BatchSpec:
    """``input_row`` (B, 1), ``input_png3d`` (B, 4, 3), target ``target_total``."""
    return BatchSpec(inputs={ROW: Scalars(["row"]),
                             "input_png3d": Ragged(PNG3D_VARS[:3], max_len=4, pad_value=pad_value)},
                     targets={"target_total": Scalars(["trueE"])})


def rows_in(inputs) -> np.ndarray:
    """The row indices of a batch's inputs (numpy arrays or tensors)."""
    x = inputs[ROW]
    x = x.cpu().numpy() if hasattr(x, "cpu") else np.asarray(x)
    return x[:, 0].astype(np.int64)


def plain_loop_orders(batches, epochs) -> dict[int, list[np.ndarray]]:
    """Epoch -> the rows of each batch, from ``set_epoch(e)`` and indexing (a plain loop)."""
    out = {}
    for epoch in epochs:
        batches.set_epoch(epoch)
        out[epoch] = [rows_in(batches[i][0]) for i in range(len(batches))]
    return out


def assert_epochs(seen: list[np.ndarray], want: dict[int, list[np.ndarray]]) -> None:
    """``seen`` (the rows of each step, in order) is the batches of ``want``'s epochs, in order."""
    flat = [(epoch, i, rows) for epoch, batches in want.items() for i, rows in enumerate(batches)]
    assert len(seen) == len(flat), (len(seen), len(flat))
    for got, (epoch, i, rows) in zip(seen, flat):
        if not np.array_equal(got, rows):
            which = [(e, j) for e, j, r in flat if np.array_equal(got, r)]
            raise AssertionError(f"step {i} of epoch {epoch} saw the rows of (epoch, batch) {which or '?'}")
