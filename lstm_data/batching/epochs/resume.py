"""How an epoch's batches are dealt to ranks, and what is left of it after an interrupted world.

Every rank of a world of ``W`` ranks holds the same epoch order: ``N`` batches, each a
set of rows. The batches are dealt to the ranks in equal *lanes* of ``N // W``
batches (the ``N % W`` left over are the epoch's remainder, never more than
``W - 1`` batches), in one of two assignments:

``"rounds"``
    Step ``j`` of every rank takes one of the ``W`` batches of round ``j``. When
    the batches differ in real elements, the order is first cut in windows of
    ``W * MATCH_ROUNDS`` batches, each sorted by real elements, so a round holds
    batches of about the same size (no rank waits long for another at a step);
    then inside a round the largest batch goes to the rank that has had the
    fewest real elements so far, so every rank sees about the same number over
    the epoch. Ranks whose totals differ by less than the round's spread of
    sizes are ordered at random (drawn from the seed, the epoch and the deal), so
    a rank is not tied to the same kind of batch (e.g. the same length class of
    budget batches) every epoch. At any step the ranks together have seen a prefix of this
    sequence. Used when the order is shuffled in RAM (``shuffle=True``).
``"runs"``
    Rank ``r`` takes the ``r``-th of ``W`` consecutive runs of the order, so with
    ``shuffle="block"`` each rank reads its own windows of the data (about ``1 / W``
    of it) and with ``shuffle=False`` its own stretch. Used for those two orders.

Resuming on another world. A state saved at step ``k`` (every rank at step ``k``,
as synchronous data-parallel training runs) says which batches were seen: the
first ``k`` of every lane. The remaining batches, in the epoch's order, form the
*pool* that the new world of ``W'`` ranks deals with the same assignment. A state
saved by that world records the earlier worlds as ``history`` (a list of
``[world_size, steps]``), so a run can change its world size any number of times
in one epoch and the pool is still known from a few ints. Later epochs have no
history: they are exactly those a fresh world of ``W'`` ranks has.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Protocol, Sequence

import numpy as np

from lstm_data.errors import OptionError

if TYPE_CHECKING:
    from lstm_data.batching.building.builder import BatchBuilder
    from lstm_data.batching.order.bucketing import Bucketing

__all__ = ["deal", "remaining_pool", "assignment_of", "batch_elements", "history_of", "state_count", "MATCH_ROUNDS",
           "Countable"]

#: rounds per window of batches sorted by size before dealing (``"rounds"`` assignment)
MATCH_ROUNDS = 16
#: the random stream of the deal's rank choices (apart from the order's streams of the same seed)
_DEAL_STREAM = 0x6465616C
#: how far, in units of a round's spread of batch sizes, the deal's random choice may reorder the ranks' loads
_NOISE = 1.0


def assignment_of(shuffle: bool | str) -> str:
    """How the batches of an order are dealt to ranks: ``"rounds"`` for ``shuffle=True``, else ``"runs"``."""
    return "rounds" if shuffle is True else "runs"


def deal(costs: np.ndarray, world: int, assignment: str, key: Sequence[int] | None = None) -> np.ndarray:
    """Deal a pool of batches to ``world`` ranks in equal lanes.

    Parameters
    ----------
    costs
        Real elements of each batch of the pool, in the pool's order.
    world
        The number of ranks.
    assignment
        ``"rounds"`` or ``"runs"`` (see the module docstring).
    key
        Ints (seed, epoch, which deal of the epoch) that pick which rank takes which
        batch of a round while the ranks' loads stay balanced (see the module
        docstring); ``None``: always the largest batch to the least loaded rank.

    Returns
    -------
    numpy.ndarray
        Shape ``(world, len(costs) // world)``: the pool positions of every rank's lane.
    """
    n = len(costs) // world
    if assignment == "runs" or n == 0 or world == 1:
        return np.arange(n * world, dtype=np.intp).reshape(world, n)
    costs = np.asarray(costs, dtype=np.float64)
    out = np.empty((world, n), dtype=np.intp)
    if np.all(costs[:n * world] == costs[0]):  # equal batches: plain round robin
        out[:] = np.arange(n * world, dtype=np.intp).reshape(n, world).T
        return out
    window = np.arange(len(costs)) // (world * MATCH_ROUNDS)
    sequence = np.lexsort((costs, window)).astype(np.intp)  # sizes matched inside each window
    rounds = sequence[:n * world].reshape(n, world)
    cost = costs[rounds]
    # with a key, ranks whose loads differ by less than the round's spread of sizes are ordered at random
    noise = np.zeros((n, world))
    if key is not None:
        rng = np.random.default_rng([*(int(k) for k in key), _DEAL_STREAM])
        noise = rng.random((n, world)) * (_NOISE * (cost.max(axis=1) - cost.min(axis=1)))[:, None]
    load = np.zeros(world)
    for j in range(n):  # one small sort per round (not per row)
        by_cost = np.argsort(-cost[j], kind="stable")
        by_load = np.argsort(load + noise[j], kind="stable")
        out[by_load, j] = rounds[j, by_cost]
        load[by_load] += cost[j, by_cost]
    return out


def remaining_pool(costs: np.ndarray, history: Sequence[tuple[int, int]], assignment: str,
                   key: Sequence[int] | None = None) -> np.ndarray:
    """The batches of an epoch that no earlier world has seen, in the epoch's order.

    Parameters
    ----------
    costs
        Real elements of every batch of the epoch.
    history
        ``(world_size, steps)`` of each earlier world, oldest first: each saw the first
        ``steps`` batches of every lane of its deal of the pool then left.
    assignment
        How the batches are dealt (:func:`deal`).
    key
        The deals' key without the deal's number (see :func:`deal`): the ``i``-th
        earlier world dealt with ``(*key, i)``.

    Returns
    -------
    numpy.ndarray
        Batch indices of the epoch not yet seen.

    Raises
    ------
    ValueError
        A world size is < 1, or steps exceed that world's lanes.
    """
    pool = np.arange(len(costs), dtype=np.intp)
    for i, (world, steps) in enumerate(history):
        if world < 1 or steps < 0:
            raise OptionError(f"a resume history entry must be [world_size >= 1, steps >= 0], got {[world, steps]}")
        lanes = deal(costs[pool], world, assignment, None if key is None else (*key, i))
        if steps > lanes.shape[1]:
            raise OptionError(f"the state says {steps} steps were taken on {world} ranks, but that world had "
                              f"{lanes.shape[1]} batches per rank left")
        keep = np.ones(len(pool), dtype=bool)
        keep[lanes[:, :steps].reshape(-1)] = False
        pool = pool[keep]
    return pool


class Countable(Protocol):
    """What :func:`batch_elements` reads of a batch sequence (a ``Batches``)."""

    def __len__(self) -> int: ...

    def rows_of(self, index: int, epoch: int | None = None) -> np.ndarray: ...

    @property
    def bucketing(self) -> Bucketing | None: ...

    @property
    def builder(self) -> BatchBuilder: ...


def batch_elements(batches: Countable, epoch: int) -> np.ndarray:
    """Real elements of every batch of ``epoch``: its rows, or with ``bucket_by`` that field's prongs.

    Parameters
    ----------
    batches
        The batch sequence.
    epoch
        An int >= 0.

    Returns
    -------
    numpy.ndarray
        One int64 per batch.
    """
    rows = [batches.rows_of(i, epoch) for i in range(len(batches))]
    bucketing = batches.bucketing
    if bucketing is None:
        return np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    lengths = bucketing.lengths(batches.builder.row_lengths(bucketing.group))
    return np.fromiter((int(lengths[r].sum()) for r in rows), dtype=np.int64, count=len(rows))


def state_count(value: Any, key: str, least: int = 0) -> int:
    """``value`` of ``key`` of a saved batch sequence state as an int >= ``least``, or the
    :class:`~lstm_data.errors.OptionError` naming the state and the key."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < least:
        raise OptionError(f"batch sequence state: {key} must be an int >= {least}, got {value!r}")
    return int(value)


def history_of(state: Mapping[str, Any]) -> tuple[int, list[tuple[int, int]]]:
    """The world size and resume history a state was saved with (1 and none for unsharded batches).

    Raises
    ------
    OptionError
        A world size below 1, negative steps or a malformed history, naming the key.
    """
    world = state.get("world_size")
    key = "world_size"
    if world is None:  # an unsharded sequence, or a shard's state of an earlier release
        shard = state.get("shard")
        world, key = (shard[1], "shard") if isinstance(shard, (list, tuple)) and len(shard) == 2 else (1, key)
    world = state_count(world, key, 1)
    history = state.get("history", [])
    if not isinstance(history, (list, tuple)) or not all(
            isinstance(h, (list, tuple)) and len(h) == 2 for h in history):
        raise OptionError(f"batch sequence state: history must be a list of [world_size, steps], got {history!r}")
    return world, [(state_count(w, "history world_size", 1), state_count(k, "history steps")) for w, k in history]
