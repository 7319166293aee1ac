"""What an epoch's order costs and how well it mixes: :meth:`Batches.stats <lstm_data.batching.epochs.batches.Batches.stats>`.

Figures are computed from row lengths and the epoch's plan alone (no batch is
built):

* ``padding``: per Ragged output, padded slots per real element kept
  (``(slots - real) / real``; 0 means no padding);
* ``truncated``: per Ragged output with ``max_len``, the rows longer than it
  (``rows`` and ``fraction``): their last elements never reach the model;
* ``mixing``: the mean distance, in the data's order, between two rows of one batch,
  divided by the same mean under a full shuffle (``(n + 1) / 3``): about 1 for a
  full shuffle, near 0 when batches hold neighbouring rows (block shuffle with
  small windows, no shuffle);
* ``length_mixing``: per Ragged output, the variance of row lengths (capped at
  ``max_len``) inside a batch
  over its full-shuffle value: about 1 for a full shuffle, near 0 with length
  bucketing or budget batches (rows of similar length meet);
* ``file_mixing`` (data of several files): one minus the mean concentration of a
  batch's rows in one file (the sum of squared file shares), divided by the same
  under a full shuffle: about 1 for a full shuffle, 0 when each batch comes from
  one file.
"""
from __future__ import annotations

from lstm_data._util.plural import counted

import logging
from collections.abc import Sized
from typing import Any, Callable, Protocol, runtime_checkable

import numpy as np

__all__ = ["order_stats", "mixing_of", "HasRows", "GivesFigures", "Picked", "log_epoch_stats"]

_log = logging.getLogger("lstm_data")


class HasRows(Protocol):
    """A batch sequence whose batches' rows can be asked for (``Batches``, a shard)."""

    def __len__(self) -> int: ...

    def rows_of(self, index: int, epoch: int | None = None) -> np.ndarray: ...


@runtime_checkable
class GivesFigures(Protocol):
    """A batch sequence that says what it knows of an epoch (every batch source of lstm_data): a
    capability the adapters check with ``isinstance`` before logging an epoch's figures."""

    def epoch_figures(self, epoch: int) -> dict[str, Any]:
        """``epoch`` and ``batches`` (the batches served in it), and whatever else the source
        knows without building a batch: the order's figures (:func:`order_stats`) when it has
        the rows of its data, ``elements`` (real elements) when it has their counts. Never raises
        for an epoch it serves."""
        ...


class Picked:
    """The batches ``indices`` of ``seq``, as a sequence of their own (for :func:`order_stats` of a share).

    Parameters
    ----------
    seq
        The batches.
    indices
        Batch indices of ``seq``, in the share's order.
    """

    def __init__(self, seq: HasRows, indices: np.ndarray) -> None:
        self.seq, self.indices = seq, np.asarray(indices, dtype=np.intp)

    def __len__(self) -> int:
        return len(self.indices)

    def rows_of(self, index: int, epoch: int | None = None) -> np.ndarray:
        """The rows of the share's batch ``index`` (batch ``indices[index]`` of ``seq``)."""
        return self.seq.rows_of(int(self.indices[index]), epoch)


def mixing_of(batches: list[np.ndarray], n: int) -> float:
    """Mean ``|i - j|`` of two rows of one batch over the full-shuffle mean ``(n + 1) / 3``.

    Parameters
    ----------
    batches
        Each batch's positions in the data's order (``0 .. n - 1``).
    n
        Rows in the data.
    """
    total = pairs = 0.0
    for pos in batches:  # one sort per batch (not per row)
        m = len(pos)
        if m < 2:
            continue
        s = np.sort(pos).astype(np.float64)
        total += float(np.dot(s, 2 * np.arange(m) - m + 1))
        pairs += m * (m - 1) / 2
    if pairs == 0 or n < 2:
        return float("nan")
    return (total / pairs) / ((n + 1) / 3)


def _file_mixing(batches: list[np.ndarray], part_of: np.ndarray, n_parts: int) -> float:
    shares = np.bincount(part_of, minlength=n_parts) / len(part_of)
    h_all = float(np.dot(shares, shares))
    got = want = 0.0
    for rows in batches:
        m = len(rows)
        counts = np.bincount(part_of[rows], minlength=n_parts)
        got += float(np.dot(counts, counts)) / m / m
        want += h_all + (1 - h_all) / m
    k = len(batches)
    return (1 - got / k) / (1 - want / k) if want / k < 1 else float("nan")


def _length_mixing(batches: list[np.ndarray], lens: np.ndarray) -> float:
    seen = np.concatenate(batches) if batches else np.zeros(0, dtype=np.intp)
    n = len(seen)
    total_var = float(np.var(lens[seen])) if n > 1 else 0.0
    if total_var == 0:
        return float("nan")
    got = sum(float(np.var(lens[r])) * len(r) for r in batches if len(r) > 1)
    want = sum(len(r) - 1 for r in batches if len(r) > 1) * total_var * n / (n - 1)
    return got / want if want else float("nan")


def order_stats(seq: HasRows, epoch: int, fields: Any, row_lengths: Callable[[str], np.ndarray],
                padded_width: Callable[[Any, int], int], n_rows: int, view: np.ndarray | None,
                parts: np.ndarray | None) -> dict[str, Any]:
    """The cost and mixing figures of ``epoch`` of ``seq`` (see the module).

    Parameters
    ----------
    seq
        The batches (``rows_of`` gives dataset rows).
    epoch
        The epoch.
    fields
        The resolved spec fields.
    row_lengths
        Per-row lengths of a ragged group over the whole dataset.
    padded_width
        ``(field, longest) -> width`` of a batch, as the batches are built.
    n_rows
        Rows of the data the batches are drawn from.
    view
        The dataset rows of that data, or ``None`` for every row of the dataset.
    parts
        Cumulative row counts of the dataset's files, or ``None`` for one file.

    Returns
    -------
    dict
        ``batches``, ``rows``, ``padding``, ``truncated`` and ``length_mixing`` (by
        output), ``mixing``,
        ``file_mixing`` (``None`` for one file).
    """
    rows = [np.asarray(seq.rows_of(i, epoch)) for i in range(len(seq))]
    n_seen = int(sum(len(r) for r in rows))
    padding: dict[str, float] = {}
    truncated: dict[str, dict[str, float]] = {}
    length_mixing: dict[str, float] = {}
    for f in fields:
        if f.group is None:
            continue
        lens = row_lengths(f.group)
        max_len = f.ragged.max_len
        slots = real = 0
        for r in rows:  # one max per batch
            if not len(r):
                continue
            lr = lens[r]
            longest = int(lr.max()) if max_len is None else min(int(lr.max()), max_len)
            slots += len(r) * padded_width(f, longest)
            real += int(lr.sum() if max_len is None else np.minimum(lr, max_len).sum())
        padding[f.name] = (slots - real) / real if real else float("nan")
        length_mixing[f.name] = _length_mixing(rows, lens if max_len is None else np.minimum(lens, max_len))
        if max_len is not None:
            cut = int(sum(int((lens[r] > max_len).sum()) for r in rows))
            truncated[f.name] = {"rows": cut, "fraction": cut / n_seen if n_seen else 0.0}
    positions = rows
    if view is not None:  # a row's position among the view's rows, in the data's order
        rank = np.empty(int(view.max()) + 1 if len(view) else 0, dtype=np.int64)
        rank[np.sort(view)] = np.arange(len(view))
        positions = [rank[r] for r in rows]
    file_mixing = None
    if parts is not None and len(parts) > 2:
        part_of = (np.searchsorted(parts, np.arange(int(parts[-1])), side="right") - 1).astype(np.int64)
        file_mixing = _file_mixing([r for r in rows if len(r)], part_of, len(parts) - 1)
    return {"epoch": epoch, "batches": len(rows), "rows": n_seen, "padding": padding,
            "truncated": truncated, "length_mixing": length_mixing, "mixing": mixing_of(positions, n_rows), "file_mixing": file_mixing}


def log_epoch_stats(batches: object, epoch: int, waited: float | None = None) -> dict[str, Any] | None:
    """Log what is known of ``epoch`` on the ``lstm_data`` logger (INFO), once; for adapters at epoch end.

    Parameters
    ----------
    batches
        Any batch sequence: one that gives figures (:class:`GivesFigures`: every batch
        source of lstm_data) logs those it knows (a store: its batches and real elements;
        ``Batches`` and shards of it: the order's figures too); others log their batch count.
    epoch
        The epoch that ended.
    waited
        Seconds the training loop waited for batches in that epoch, if measured.

    Returns
    -------
    dict or None
        The figures logged, or ``None`` when INFO is off.
    """
    if not _log.isEnabledFor(logging.INFO):
        return None
    if isinstance(batches, GivesFigures):
        st = batches.epoch_figures(epoch)
    else:
        st = {"epoch": epoch, "batches": len(batches) if isinstance(batches, Sized) else None}
    parts = [f"epoch {epoch}: {st['batches']} batches" if st["batches"] is None
             else f"epoch {epoch}: {counted(st['batches'], 'batch')}"]
    if st.get("rows") is not None:
        parts[0] += f", {counted(st['rows'], 'row')}"
    if st.get("elements") is not None:
        parts[0] += f", {counted(st['elements'], 'real element')}"
    if "padding" in st:
        pads = ", ".join(f"{k} {v:.3f}" for k, v in st["padding"].items()) or "-"
        cut = ", ".join(f"{k} {v['rows']}" for k, v in st["truncated"].items()) or "-"
        files = "-" if st["file_mixing"] is None else f"{st['file_mixing']:.2f}"
        parts += [f"padded per real element: {pads}", f"rows cut by max_len: {cut}",
                  f"mixing (1 = full shuffle): rows {st['mixing']:.2f}, files {files}"]
    if waited is not None:
        parts.append(f"waited {waited:.3f} s for batches")
        st["waited"] = waited
    _log.info("%s", "; ".join(parts))
    return st
