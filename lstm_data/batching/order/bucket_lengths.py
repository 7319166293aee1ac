"""Padded lengths chosen from the length histogram: few distinct shapes, least padding.

A compiled model (XLA, JAX, ``torch.compile``) compiles once per input shape. With
``Order(bucket_by=F, bucket_lengths="auto", max_shapes=k)`` the Ragged outputs of
``F``'s group take one of at most ``k`` padded lengths: each batch pads to the
smallest chosen length that holds its longest row (after ``max_len`` and
``pad_to_multiple_of``), in every layout (``"padded"``, ``"channels_first"``; a
``"packed"`` output has no padded length and is left as it is). No chosen length
is above the ``bucket_by`` field's ``max_len`` (a given one is refused), and
another output of the group never pads beyond its own ``max_len``. The lengths are chosen by an exact dynamic programme over
the distinct row widths of the whole dataset (so every split of it gets the same
shapes): among all sets of ``k`` widths that include the largest, the one that
minimises the padding of every row to its own bucket length, ``O(k * D**2)`` for
``D`` distinct widths. ``pad_to_multiple_of`` with the same number of shapes is
one such set, so the chosen lengths never pad more rows.

Example
-------
>>> choose_lengths(np.array([1, 1, 2, 3, 9]), 2).tolist()
[3, 9]
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from lstm_data.errors import OptionError

__all__ = ["choose_lengths", "padding_of", "BucketLengths", "bucket_widths"]


def choose_lengths(widths: np.ndarray, k: int) -> np.ndarray:
    """The at most ``k`` padded lengths that minimise the padding of ``widths``.

    Parameters
    ----------
    widths
        Every row's padded width if it were alone (its length after ``max_len`` and
        ``pad_to_multiple_of``).
    k
        The number of distinct lengths (shapes) allowed, >= 1.

    Returns
    -------
    ndarray of int64
        Increasing lengths; the last is the largest width. Empty for no rows.
    """
    values, counts = np.unique(np.asarray(widths, dtype=np.int64), return_counts=True)
    d = len(values)
    if d <= k:
        return values
    v = values.astype(np.float64)
    c_cum = np.concatenate([[0.0], np.cumsum(counts, dtype=np.float64)])
    s_cum = np.concatenate([[0.0], np.cumsum(counts * v)])
    dp = np.full((k, d), np.inf)  # dp[m, i]: values[0..i] in m + 1 buckets, the last ending at values[i]
    dp[0] = v * c_cum[1:] - s_cum[1:]
    parent = np.zeros((k, d), dtype=np.int64)
    for m in range(1, k):
        for i in range(m, d):  # the previous bucket ends at p < i; O(d) memory per step
            cand = dp[m - 1, :i] + v[i] * (c_cum[i + 1] - c_cum[1:i + 1]) - (s_cum[i + 1] - s_cum[1:i + 1])
            p = int(np.argmin(cand))
            parent[m, i], dp[m, i] = p, cand[p]
    m = int(np.argmin(dp[:, d - 1]))  # the first of equal costs: fewest lengths
    i_end = d - 1
    chosen = [int(values[i_end])]
    while m > 0:
        i_end = int(parent[m, i_end])
        m -= 1
        chosen.append(int(values[i_end]))
    return np.array(sorted(chosen), dtype=np.int64)


def padding_of(widths: np.ndarray, lengths: np.ndarray) -> int:
    """Padded slots beyond ``widths`` when every row pads to the smallest of ``lengths`` >= it."""
    widths = np.asarray(widths, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    padded = lengths[np.searchsorted(lengths, widths)]
    return int((padded - widths).sum())


@dataclass(frozen=True)
class BucketLengths:
    """The padded lengths of one ragged group.

    Attributes
    ----------
    group
        The ragged group whose Ragged outputs take these lengths.
    lengths
        Increasing padded lengths.
    """

    group: str
    lengths: np.ndarray

    @classmethod
    def make(cls, group: str, widths: np.ndarray, setting: Any, max_shapes: int,
             max_len: int | None = None, field: str | None = None) -> "BucketLengths":
        """The lengths of ``setting`` (``"auto"`` or a list) for rows of ``widths``.

        Parameters
        ----------
        group
            The ragged group.
        widths
            Every row's padded width if it were alone (after ``max_len`` and
            ``pad_to_multiple_of``).
        setting
            ``"auto"`` or increasing lengths.
        max_shapes
            The number of lengths ``"auto"`` chooses at most.
        max_len, field
            The ``bucket_by`` field's ``max_len`` (``None``: no limit) and name.

        Raises
        ------
        OptionError
            A given list whose largest length is below the widest row's padded width,
            or with a length above ``max_len``.
        """
        widths = np.asarray(widths, dtype=np.int64)
        if setting == "auto":
            return cls(group, choose_lengths(widths, max_shapes))
        lengths = np.asarray(setting, dtype=np.int64)
        if max_len is not None and lengths[-1] > max_len:
            above = int(lengths[lengths > max_len][0])
            capped = sorted(set(np.minimum(lengths, max_len).tolist()))
            raise OptionError(f"bucket_lengths {lengths.tolist()}: {above} is above max_len {max_len} of "
                              f"output {field or '(bucket_by)'!r} (group {group!r}), and no batch pads beyond "
                              f"max_len; give lengths up to {max_len}, e.g. {capped}")
        widest = int(widths.max()) if len(widths) else 0
        if lengths[-1] < widest:
            raise OptionError(f"bucket_lengths {lengths.tolist()}: the largest is below {widest}, the "
                              f"padded length of the longest row of group {group!r}; add it, or lower "
                              "the field's max_len")
        return cls(group, lengths)

    def width(self, width: int) -> int:
        """The chosen length for a batch whose own padded width is ``width`` (kept when above all)."""
        return int(self.widths(np.array([width]))[0])

    def widths(self, widths: np.ndarray) -> np.ndarray:
        """:meth:`width` of many batches at once."""
        widths = np.asarray(widths, dtype=np.int64)
        at = np.searchsorted(self.lengths, widths)
        picked: np.ndarray = np.where(at < len(self.lengths),
                                      self.lengths[np.minimum(at, len(self.lengths) - 1)], widths)
        return picked


def bucket_widths(order: Any, fields: Sequence[Any]) -> dict[str, tuple[int, str]]:
    """The widest padding given ``bucket_lengths`` can ask of each output of the bucketed group.

    For the batch-bytes check (:func:`~lstm_data.batching.spec.sizes.check_batch_bytes`),
    before any batch is made: a batch holding a row wider than the next-to-largest
    length pads to the largest (capped at each output's ``max_len``).

    Parameters
    ----------
    order
        The :class:`~lstm_data.batching.order.options.Order`.
    fields
        The spec's resolved fields (:class:`~lstm_data.batching.spec.outputs.ResolvedField`).

    Returns
    -------
    dict
        Output name -> ``(slots, why)``; empty without a given list of lengths.
    """
    setting = order.bucket_lengths
    if order.bucket_by is None or setting is None or isinstance(setting, str):
        return {}
    largest = int(setting[-1])
    owner = next((f for f in fields if f.name == order.bucket_by and f.group is not None), None)
    if owner is None:  # no such Ragged output: refused by name when the bucketing is made
        return {}
    out = {}
    for f in fields:
        if f.group != owner.group or not f.ragged.form.has_slots:
            continue
        cap = f.ragged.max_len
        out[f.name] = (largest if cap is None else min(largest, cap), f"bucket_lengths up to {largest}")
    return out
