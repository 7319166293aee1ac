"""How rows are ordered and grouped into batches: :class:`Order`, the one home of those options.

An ``Order`` says everything that decides which rows make batch ``i`` of epoch
``e``: the batch size, the shuffle and its seed, the blocks of a block shuffle,
length bucketing, weights, ``drop_last`` and the RAM cache (and ``read_ahead``,
how the block shuffle reads, which never changes a batch). Together with a
:class:`~lstm_data.batching.spec.batch_spec.BatchSpec` (what a batch looks like) and the
data, it fixes every batch bitwise; both round-trip through TOML (``[order]``
beside the spec's tables), so a file describes the batches it makes.

Example
-------
>>> order = Order(batch_size=256, seed=1, bucket_by="input_png3d")
>>> Order.from_dict(order.to_dict()) == order
True
"""
from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np

from lstm_data._util.checks import flag_option, positive_int_option, text_option
from lstm_data._util.declared import DeclaredOptions
from lstm_data.batching.order.registry import check_policies
from lstm_data.batching.order.sampling import check_sample
from lstm_data.errors import OptionError

__all__ = ["Order", "ORDER_KEYWORDS"]


def _seed(value: Any) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 0:
        raise OptionError(f"seed must be an int >= 0, got {value!r} (or None to draw one)")
    return int(value)


def _shuffle(value: Any) -> bool | str:
    if isinstance(value, np.bool_):
        value = bool(value)
    if value is True or value is False or value in ("auto", "block"):
        return value  # type: ignore[no-any-return]
    raise OptionError(f"shuffle must be 'auto', True, False or 'block', got {value!r}")


def _weights(value: Any) -> Any:
    if isinstance(value, str):
        if not value:
            raise OptionError("weights must name a scalar column, got ''")
        return value
    arr = np.asarray(value)
    if arr.ndim != 1 or arr.dtype.kind not in "iuf":
        raise OptionError(f"weights must be a scalar column name or one number per row, got {value!r}")
    return arr


def _cache(value: Any) -> str:
    if value != "ram":
        raise OptionError(f"cache must be None or 'ram', got {value!r}")
    return "ram"


def _bucket_lengths(value: Any) -> Any:
    if value == "auto":
        return "auto"
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise OptionError(f"bucket_lengths must be 'auto' or a list of positive ints, got {value!r}")
    out = []
    for v in value:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 1:
            raise OptionError(f"bucket_lengths must be 'auto' or a list of positive ints, got {value!r}")
        out.append(int(v))
    if not out or out != sorted(set(out)):
        raise OptionError(f"bucket_lengths must be increasing and not empty, got {value!r}")
    return tuple(out)


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False)
class Order(DeclaredOptions):
    """How rows are ordered and grouped into batches.

    Parameters
    ----------
    batch_size
        Rows per batch; the last batch may be shorter unless ``drop_last``.
    shuffle
        ``"auto"`` (default): ``True`` for data in RAM, ``"block"`` for data read
        from disk. ``True``: a fresh permutation of rows each epoch. ``False``: the
        data's order. ``"block"``: permute blocks of consecutive rows and mix rows
        inside windows of several blocks, so each stored chunk is read at most
        twice per epoch.
    seed
        Seed of every random order, an int >= 0; ``None`` is 0, as on the command
        line: a run without a seed repeats itself (give other seeds for other orders).
    drop_last
        Drop a short last batch.
    weights
        ``None`` (ones), a scalar column name, or one number per row (an array,
        which cannot be written to TOML).
    bucket_by
        A Ragged output: put rows of similar length in the same batch (sorted
        inside windows of ``bucket_window`` batches); its group is then padded
        per batch.
    bucket_window
        Batches sorted together by ``bucket_by`` (default 64).
    block_rows, window_rows
        Block and window sizes of ``shuffle="block"`` (default: from the data's
        chunks).
    read_ahead
        With ``shuffle="block"``, read the next window on a background thread while
        the batches of this one are built (default: on for data read from disk,
        off in RAM). Changes when data is read, never a batch: it is not part of
        a saved state or a store's record.
    cache
        ``"ram"``: keep built batches; the rows of each batch are fixed by the
        first epoch and later epochs permute the batches.
    max_elements
        Element-budget batches (needs ``bucket_by``): each batch holds as many rows
        as fit in this many padded slots of the ``bucket_by`` field (rows times the
        batch's padded length, at most ``batch_size`` rows); a row longer than the
        budget is a batch of its own. The epoch's rows are sorted by length and
        packed, so the number of batches is the same every epoch.
    bucket_lengths
        The padded lengths of the ``bucket_by`` field's group: ``"auto"`` chooses
        ``max_shapes`` lengths from the field's length histogram that minimise the
        padding, or give them as a list of ints; each batch pads to the smallest
        one that holds its longest row (few shapes: few recompiles under XLA, JAX
        or ``torch.compile``).
    max_shapes
        Lengths chosen by ``bucket_lengths="auto"`` (default 4).
    sample
        Draw the epoch's rows instead of taking each once: a table with
        ``classes`` (a label column: class-balanced, or ``class_weights``),
        ``vars`` and ``bins`` (reweight one or two variables to ``target``:
        ``"flat"``, ``"ref"`` or a histogram; ``threshold``, ``overflow``),
        ``replacement`` and ``epoch_size``. See :mod:`lstm_data.batching.order.sampling`
        and the docs page "Splits and sampling".
    policies
        Registered order policies by name, each with a table of its options
        (``[order.policies.NAME]`` in TOML); their stages run after the built-in
        sampling and before bucketing (see :mod:`lstm_data.batching.order.registry`).
    """

    batch_size: int = 1024
    shuffle: bool | str = "auto"
    seed: int | None = None
    drop_last: bool = False
    weights: str | np.ndarray | Sequence[float] | None = None
    bucket_by: str | None = None
    bucket_window: int = 64
    block_rows: int | None = None
    window_rows: int | None = None
    read_ahead: bool | None = None
    cache: str | None = None
    max_elements: int | None = None
    bucket_lengths: str | Sequence[int] | None = None
    max_shapes: int = 4
    sample: Mapping[str, object] | None = None
    policies: Mapping[str, Mapping[str, object]] | None = None

    TOML_TABLE: ClassVar[str] = "order"
    #: settings that change how batches are made, never what they hold
    NOT_IN_BATCHES: ClassVar[frozenset[str]] = frozenset({"read_ahead"})
    CHECKS: ClassVar[Mapping[str, Any]] = {
        "batch_size": positive_int_option("batch_size"), "shuffle": _shuffle, "seed": _seed, "drop_last": flag_option("drop_last"),
        "weights": _weights, "bucket_by": text_option("bucket_by", "name a Ragged output of the spec"), "bucket_window": positive_int_option("bucket_window"),
        "block_rows": positive_int_option("block_rows"), "window_rows": positive_int_option("window_rows"), "read_ahead": flag_option("read_ahead"),
        "cache": _cache,
        "max_elements": positive_int_option("max_elements"), "bucket_lengths": _bucket_lengths,
        "max_shapes": positive_int_option("max_shapes"), "sample": check_sample, "policies": check_policies,
    }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Order):
            return NotImplemented
        mine, theirs = self.changed(), other.changed()
        if mine.keys() != theirs.keys():
            return False
        return all(np.array_equal(v, theirs[k]) if isinstance(v, np.ndarray) or isinstance(theirs[k], np.ndarray)
                   else v == theirs[k] for k, v in mine.items())

    __hash__ = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_combinations(self)

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={'<array>' if isinstance(v, np.ndarray) else repr(v)}"
                          for k, v in self.changed().items())
        return f"Order({shown})"


def _check_combinations(order: Order) -> None:
    """Refuse settings that cannot go together (each message names both options)."""
    for name in ("max_elements", "bucket_lengths"):
        if getattr(order, name) is not None and order.bucket_by is None:
            raise OptionError(f"Order.{name} needs bucket_by: the Ragged output whose length it is about")
    if order.sample is not None and order.max_elements is not None:
        raise OptionError("Order.sample cannot be combined with max_elements: the drawn rows' lengths differ "
                          "every epoch, and so would the number of budget batches; use bucket_by without "
                          "max_elements, or weights instead of sampling")
    if order.sample is not None and order.cache == "ram":
        raise OptionError("Order.sample draws other rows every epoch; cache='ram' would repeat the first "
                          "epoch's draws: leave cache unset")
    if order.max_elements is not None and order.drop_last:
        raise OptionError("Order.drop_last does not apply with max_elements: every row is in a batch "
                          "and every epoch has the same number of batches")


#: the keyword spellings of these options that Batches and precompute took before Order
ORDER_KEYWORDS = frozenset(f.name for f in dataclasses.fields(Order))
