"""Length-bucketed batches: rows of similar prong count share a batch, so padding shrinks.

With ``Batches(..., bucket_by="input_png3d")`` each epoch's order is made in three
vectorised steps (no per-row Python):

1. the rows are ordered as without bucketing (a fresh permutation for
   ``shuffle=True``, the view's order for ``shuffle=False``);
2. the full batches of that order are cut into windows of ``bucket_window``
   batches, and each window is sorted by the ``bucket_by`` field's row length
   (prong count, capped at its ``max_len``); the sort is stable, so ties keep the
   shuffled order;
3. the sorted rows are cut into batches, and the batches are permuted (only with
   ``shuffle=True``). The rows of a short last batch (those past the last full
   batch of step 1, as without bucketing) are not sorted and stay last; with
   ``drop_last`` they are the rows dropped, as without bucketing.

With ``shuffle="block"`` (on-disk data) the same steps run inside each window of
the block plan (:mod:`lstm_data.batching.order.block_plans`), so a window is still read
once: the full batches that lie inside one window are sorted in sub-windows of
``bucket_window`` batches and permuted among themselves; a batch that straddles
two windows keeps its rows. Rows then only meet rows of the same read window,
which bounds the padding cut by the window size (``window_rows``).

Every Ragged output of the bucketed group is then padded to its batch's longest
row (a ``fixed=True`` field becomes per-batch, capped at ``max_len``), optionally
rounded up to a multiple of ``pad_to_multiple_of``. The trade-off: rows of
similar length meet in a batch more often than chance; a larger ``bucket_window``
cuts more padding and mixes less.
"""
from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from lstm_data.batching.order.plan import EpochKey, Plan, StageDefaults
from lstm_data.batching.order.rows import epoch_rng
from lstm_data.batching.spec.batch_spec import BatchSpec, Ragged, ResolvedField
from lstm_data.errors import OptionError

__all__ = ["Bucketing", "Bucketed", "make_bucketing", "bucketed_order", "bucketed_plan", "BUCKET_STREAM"]

#: the :func:`~lstm_data.batching.order.rows.epoch_rng` stream of the batch permutation
BUCKET_STREAM = 2


@dataclass(frozen=True)
class Bucketing:
    """Checked bucketing options of one :class:`~lstm_data.batching.epochs.batches.Batches`.

    Attributes
    ----------
    field
        The output whose row length orders the rows (a Ragged output).
    group
        Its ragged group.
    max_len
        Its ``max_len`` (lengths are capped at it), or ``None``.
    window
        Batches sorted together.
    multiple_of
        Per-batch widths are rounded up to a multiple of this (``None``: not rounded).
    spec
        The spec with every Ragged field of ``group`` made per-batch (``fixed=False``).
    """

    field: str
    group: str
    max_len: int | None
    window: int
    multiple_of: int | None
    spec: BatchSpec

    def lengths(self, row_lengths: np.ndarray) -> np.ndarray:
        """The sort keys: ``row_lengths`` capped at :attr:`max_len`."""
        if self.max_len is None:
            return row_lengths
        capped: np.ndarray = np.minimum(row_lengths, self.max_len)
        return capped

    def order(self, order: np.ndarray, lengths: np.ndarray, batch_size: int, seed: int, epoch: int,
              shuffle: bool) -> np.ndarray:
        """The bucketed order of an epoch (see :func:`bucketed_order`)."""
        rng = epoch_rng(seed, epoch, BUCKET_STREAM) if shuffle else None
        return bucketed_order(order, self.lengths(lengths), batch_size, self.window, rng)

    def plan(self, plan: Plan, lengths: np.ndarray, batch_size: int, seed: int,
             epoch: int) -> Plan:
        """The bucketed block plan of an epoch (see :func:`bucketed_plan`)."""
        return bucketed_plan(plan, self.lengths(lengths), batch_size, self.window,
                             epoch_rng(seed, epoch, BUCKET_STREAM))

    def to_dict(self) -> dict[str, Any]:
        """The options that made this bucketing (recorded by precomputed stores)."""
        return {"bucket_by": self.field, "bucket_window": self.window,
                "pad_to_multiple_of": self.multiple_of}


class Bucketed(StageDefaults):
    """The stage of ``Order.bucket_by``: rows of similar length in the same batch."""

    def __init__(self, bucketing: Bucketing, lengths: Callable[[str], np.ndarray]) -> None:
        self.bucketing = bucketing
        self.lengths = lengths  # row lengths of a group, by view position

    def plan(self, plan: Plan, key: EpochKey) -> Plan:
        """``plan`` sorted by length in windows of batches (inside each read window of a block plan)."""
        lengths = self.lengths(self.bucketing.group)
        if plan.windows is not None:
            return self.bucketing.plan(plan, lengths, key.batch_size, key.seed, key.epoch)
        return Plan(self.bucketing.order(plan.order, lengths, key.batch_size, key.seed, key.epoch,
                                         shuffle=bool(key.shuffle)))


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def make_bucketing(spec: BatchSpec, fields: Sequence[ResolvedField], bucket_by: Any, bucket_window: Any,
                   pad_to_multiple_of: Any, shuffle: bool | str) -> Bucketing | None:
    """Check the bucketing arguments of ``Batches``; ``None`` when ``bucket_by`` is ``None``.

    Raises
    ------
    ValueError
        ``bucket_by`` is not a Ragged output of ``spec`` (close names are
        suggested), ``bucket_window`` is not a positive int, ``pad_to_multiple_of``
        is not a positive int or None.
    """
    window = _positive_int(bucket_window, "bucket_window")
    multiple = None if pad_to_multiple_of is None else _positive_int(pad_to_multiple_of, "pad_to_multiple_of")
    if bucket_by is None:
        return None
    ragged = {f.name: f for f in fields if f.group is not None}
    if not isinstance(bucket_by, str) or bucket_by not in ragged:
        close = difflib.get_close_matches(str(bucket_by), list(ragged), n=3, cutoff=0.5)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise OptionError(f"bucket_by must name a Ragged output of the spec, got {bucket_by!r}{hint} "
                          f"Ragged outputs: {sorted(ragged) or 'none'}")
    chosen = ragged[bucket_by]
    assert chosen.group is not None  # a Ragged output has a group
    return Bucketing(bucket_by, chosen.group, chosen.ragged.max_len, window, multiple,
                     per_batch_spec(spec, fields, chosen.group))


def bucketed_plan(plan: Plan, lengths: np.ndarray, batch_size: int, window: int,
                  rng: np.random.Generator) -> Plan:
    """Bucket the full batches inside each window of a block plan; windows keep their rows.

    Parameters
    ----------
    plan
        The epoch's block plan (``order`` holds view positions).
    lengths
        Sort key of every view position.
    batch_size, window
        Rows per batch; batches per sorted sub-window.
    rng
        Permutes the full batches of each window among themselves (one draw per window).

    Returns
    -------
    Plan
        The same windows and blocks; ``order`` permuted inside the runs of whole
        batches that lie in one window.
    """
    assert plan.windows is not None  # a block plan
    order = plan.order.copy()
    starts = plan.windows.starts
    for w in range(len(starts) - 1):  # one sort per window (not per row)
        lo = -(-int(starts[w]) // batch_size) * batch_size
        hi = int(starts[w + 1]) // batch_size * batch_size
        if hi - lo < batch_size:
            continue
        picked = lo + bucketed_order(np.arange(hi - lo, dtype=np.intp), lengths[order[lo:hi]],
                                     batch_size, window, rng)
        order[lo:hi] = order[picked]
    return Plan(order, windows=plan.windows)


def per_batch_spec(spec: BatchSpec, fields: Sequence[ResolvedField], group: str) -> BatchSpec:
    """``spec`` with every Ragged field of ``group`` padded per batch (``fixed=False``)."""
    in_group = {f.name for f in fields if f.group == group}
    parts: dict[str, dict[str, Any]] = {"input": {}, "target": {}}
    for role, name, fld in spec.fields():
        if name in in_group and isinstance(fld, Ragged) and fld.fixed:
            fld = dataclasses.replace(fld, fixed=False)
        parts[role][name] = fld
    return spec.replace(inputs=parts["input"], targets=parts["target"])


def bucketed_order(order: np.ndarray, lengths: np.ndarray, batch_size: int, window: int,
                   rng: np.random.Generator | None) -> np.ndarray:
    """Sort ``order`` by length inside windows of ``window`` batches, then permute the batches.

    Parameters
    ----------
    order
        The epoch's positions before bucketing (a permutation of the view's positions).
    lengths
        Sort key of every view position (indexed by the values of ``order``).
    batch_size, window
        Rows per batch; batches per sorted window.
    rng
        Permutes the full batches; ``None`` keeps them in window order.

    Returns
    -------
    ndarray of intp
        The same positions: full batches first, then the unsorted short tail.
    """
    n_full = len(order) // batch_size
    body, tail = order[:n_full * batch_size], order[n_full * batch_size:]
    win = np.arange(len(body), dtype=np.intp) // (window * batch_size)
    body = body[np.lexsort((lengths[body], win))]  # lexsort is stable: ties keep the shuffled order
    if rng is not None and n_full > 1:
        body = body.reshape(n_full, batch_size)[rng.permutation(n_full)].reshape(-1)
    return np.concatenate([body, tail]).astype(np.intp, copy=False)
