"""torch adapter: :class:`TorchBatches`, a map-style ``torch.utils.data.Dataset`` of whole batches.

Example
-------
>>> data = TorchBatches(batches)                                              # doctest: +SKIP
>>> loader = DataLoader(data, batch_size=None, sampler=data.sampler,          # doctest: +SKIP
...                     num_workers=2, persistent_workers=True)
>>> for epoch in range(n):                                                    # doctest: +SKIP
...     for inputs, targets, weights in loader: ...

Item ``i`` is batch ``i`` as ``(inputs, targets, weights)`` dicts of tensors:
float data as float32 (or the spec's float64), lengths as int64. Use
``batch_size=None`` in the ``DataLoader``: the batches are already batched.

Epochs. With ``sampler=data.sampler`` (an :class:`EpochSampler`) the main
process hands out keys ``(epoch, i)``, and the item of a key is batch ``i`` of
that epoch, whichever worker builds it: each pass over the loader is the next
epoch (``(seed, 0)``, ``(seed, 1)``, ...), with or without
``persistent_workers``, and without any call per epoch.
:meth:`TorchBatches.set_epoch` still chooses the epoch (the next pass's, for the
sampler). Without the sampler, keys are plain ``i`` and the workers read their
own copy's epoch: call ``set_epoch`` before each epoch's iterator and leave
``persistent_workers`` off (persistent workers keep the copy they started with
and would repeat its epoch).

Threads or processes. The kernels release the GIL, so with ``threads=2`` and a
``DataLoader`` without worker processes, batches are built ahead on a second
thread of the main process: nothing to transfer. In a ``DataLoader`` worker
process, a batch reaches the main process through a few shared-memory buffers
each worker reuses (:mod:`lstm_data.adapters.torch_slots`): in-RAM batches are
built straight into them (no copy), the main process makes views, and a file
descriptor is passed once per buffer.
torch's own transfer (``worker_transfer="torch"``) makes a new shared-memory file
per tensor and batch, which costs several times the batch itself.

Nested tensors. With ``nested=True`` a packed ``Ragged`` input (``layout="packed"``:
``<name>`` (T, V) with ``<name>_cu_seqlens``) is handed out as a torch ``nested``
jagged tensor, ``torch.nested.nested_tensor_from_jagged(values, offsets=cu_seqlens)``,
whose values are the packed tensor itself (no copy); ``to_padded_tensor(pad)`` gives
the padded batch back. ``<name>_cu_seqlens`` and ``<name>_max_seqlen`` stay in the
inputs for kernels that take them.

NaN. An input holding NaN padding (``pad_value=nan`` without ``nan_to``, lstm_ee's
choice) makes the loss NaN, masked or not (``nan * 0`` is NaN): :class:`TorchBatches`
warns when it is made, naming the input and the fix, and warns once when the first
batch it builds holds NaN values.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable, Iterator, Mapping

import numpy as np

from lstm_data._util.types import PlainDict, PlainMapping
from lstm_data._util.checks import check_count, check_index
from lstm_data.adapters.ahead import Ahead
from lstm_data.adapters.epochs import batch_of
from lstm_data.adapters.nan_warning import warn_nan_padding, warn_nan_values
from lstm_data.batching.epochs.resume import state_count
from lstm_data.batching.epochs.source import BatchSource, ShardSource
from lstm_data.batching.order.stats import log_epoch_stats
from lstm_data.batching.spec.batch_spec import Batch
from lstm_data.batching.spec.fields import Ragged
from lstm_data.errors import MissingExtraError, OptionError, redact

try:
    import torch
    from torch.utils.data import Dataset as _TorchDataset
    from torch.utils.data import Sampler as _TorchSampler
except ImportError as _exc:  # pragma: no cover - depends on the environment
    raise MissingExtraError("lstm_data.torch needs PyTorch: pip install 'lstm_data[torch]'", extra="torch") from _exc

__all__ = ["TorchBatches", "EpochSampler", "nested_from_packed"]


def _tensors(part: Mapping[str, np.ndarray]) -> dict[str, torch.Tensor]:
    """Tensors sharing each array's memory, or copies of read-only arrays (a RAM cache's), each of its
    array's shape (a 0-d ``<name>_max_seqlen`` stays 0-d: ``np.ascontiguousarray`` would make it 1-d)."""
    return {k: torch.from_numpy(np.require(v, requirements="C")) if v.flags.writeable else torch.tensor(v)
            for k, v in part.items()}


def _loader_worker() -> bool:
    """Running in a ``DataLoader`` worker process."""
    return torch.utils.data.get_worker_info() is not None


def _in_worker() -> bool:
    """Running in a ``DataLoader`` worker process on a system with shared-memory slots."""
    from lstm_data.adapters.torch_slots import AVAILABLE
    return AVAILABLE and _loader_worker()


def _identity(batches: BatchSource) -> dict[str, Any]:
    """What identifies ``batches`` in a saved state (seed, batch size, shard, ...)."""
    return {k: v for k, v in batches.state_dict().items() if k not in ("epoch", "next_batch")}


def _check_sharded(batches: BatchSource) -> None:
    """Warn when torch.distributed runs several ranks and ``batches`` is not one rank's share."""
    dist = torch.distributed
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
        return
    world = batches.world_size if isinstance(batches, ShardSource) else None
    if world != dist.get_world_size():
        warnings.warn(
            f"TorchBatches under torch.distributed with {dist.get_world_size()} ranks, but the batches "
            f"are {'not sharded' if world is None else f'sharded for {world} ranks'}: every rank would "
            "train on the same batches. Use batches.shard(dist.get_rank(), dist.get_world_size())",
            stacklevel=3)


def _sampler_state(state: Any) -> Mapping[str, Any]:
    """The sampler's part of a torchdata ``StatefulDataLoader`` state (any worker count), else ``state``;
    an :class:`~lstm_data.errors.OptionError` naming the key whose value is not a table."""
    key = "state"
    table = _table(state, key)
    snapshot = table.get("_snapshot")
    if snapshot is not None:
        key = "_snapshot"
        snapshot = _table(snapshot, key)
        if "_main_snapshot" in snapshot:
            key = "_snapshot._main_snapshot"
            table = _table(snapshot["_main_snapshot"], key)
    inner = table.get("_index_sampler_state")
    if inner is None:
        return table
    return _table(inner, "_index_sampler_state" if key == "state" else f"{key}._index_sampler_state")


def _table(value: Any, key: str) -> Mapping[str, Any]:
    """``value`` if it is a table; a loader state's ``key`` that is not (a list, a number, ...) is refused."""
    if not isinstance(value, Mapping):
        raise OptionError(f"EpochSampler: the loader state's {key} must be a table (a dict, as state_dict() "
                          f"saves it), got a {type(value).__name__}: {redact(value)[:200]}")
    return value


class EpochSampler(_TorchSampler[tuple[int, int]]):
    """Keys ``(epoch, 0) .. (epoch, n - 1)`` per pass, the epoch going up by one each pass.

    Runs in the main process (a ``DataLoader`` draws its keys there), so worker
    processes, persistent or not, need no epoch of their own.

    Parameters
    ----------
    n_batches
        Batches per epoch.
    epoch
        The epoch of the first pass.
    identity
        What identifies the batches in :meth:`state_dict` (their seed, batch size,
        shard, digests of spec and data, ...), or a function that makes it when a state
        is first saved or loaded; a state with other values is refused by
        :meth:`load_state_dict`.
    source
        The batches: their figures are logged at the end of each pass; a shard
        (:class:`~lstm_data.batching.epochs.source.ShardSource`, resumable on another
        world size) also makes the keys, the state and the resumption.

    Attributes
    ----------
    epoch : int
        The epoch of the next pass.
    """

    def __init__(self, n_batches: int, epoch: int = 0,
                 identity: Mapping[str, object] | Callable[[], Mapping[str, object]] | None = None,
                 source: BatchSource | None = None) -> None:
        self.n_batches = check_count(n_batches, "n_batches")
        self._source = source if isinstance(source, ShardSource) else None
        self._batches = source  # whose figures are logged at the end of each pass
        self.epoch = check_count(epoch, "epoch")
        # made when a state is first saved or loaded: a digest of every value is no cost of an epoch
        self._identity_of = identity if callable(identity) else None
        self._identity = None if callable(identity) else dict(identity or {})
        self._start = 0  # first batch of the next pass (set by load_state_dict)
        self._drawn = (self.epoch, 0)  # epoch of the pass being drawn, keys drawn from it

    @property
    def identity(self) -> dict[str, object]:
        """What identifies the batches in :meth:`state_dict` (made on first use when given as a function)."""
        if self._identity is None:
            self._identity = dict(self._identity_of() if self._identity_of is not None else {})
        return self._identity

    def __len__(self) -> int:
        return self.n_batches

    def __iter__(self) -> Iterator[tuple[int, int]]:
        # a generator: the epoch moves on when a pass draws its first key, not at iter():
        # a DataLoader that starts worker processes makes an extra iterator it never reads
        epoch, self.epoch = self.epoch, self.epoch + 1
        start, self._start = self._start, 0
        key = None if self._source is None else self._source.sampler_key
        for i in range(start, self.n_batches):
            self._drawn = (epoch, i + 1)
            yield (epoch, i) if key is None else key(epoch, i)
        if self._batches is not None:  # every key of the pass drawn: its figures (INFO)
            log_epoch_stats(self._batches, epoch)

    def set_epoch(self, epoch: int) -> None:
        """Make ``epoch`` the next pass's epoch (from its first batch).

        Parameters
        ----------
        epoch
            An int >= 0.
        """
        self.epoch = check_count(epoch, "epoch")
        self._start = 0
        self._drawn = (self.epoch, 0)

    def state_dict(self) -> PlainDict:
        """Where the keys stand, to save with a checkpoint.

        torchdata's ``StatefulDataLoader`` saves it with its own state (taken as each
        batch is handed out, so keys drawn ahead for workers are not counted).

        Returns
        -------
        dict
            ``epoch`` and ``next_batch`` of the pass being drawn, plus what identifies
            the batches (``n_batches``, ``seed``, ``batch_size``, ``shard``, ...): plain ints.
        """
        epoch, drawn = self._drawn
        if self._source is not None:
            return {**self._source.state_at(epoch, drawn), "n_batches": self.n_batches}
        return {"epoch": epoch, "next_batch": drawn, "n_batches": self.n_batches, **self.identity}

    def load_state_dict(self, state: PlainMapping) -> None:
        """Resume from :meth:`state_dict`: the next pass draws the keys not drawn yet.

        Parameters
        ----------
        state
            A :meth:`state_dict` of a sampler of the same batches, or the whole state
            of a torchdata ``StatefulDataLoader`` that drew from one, with any number of
            workers (its own ``load_state_dict`` needs the same worker count).

        Raises
        ------
        OptionError
            The state comes from other batches (seed, count, shard, ... differ: each is named),
            or is not such a state (a key holding a list, a negative epoch: the key is named).
        """
        state = _sampler_state(state)
        if self._source is not None:  # checks the state and deals what is left to this world
            self._source.load_state_dict({k: v for k, v in state.items() if k != "n_batches"})
            epoch, drawn = self._source.resume_point
            if drawn >= self.n_batches:
                epoch, drawn = epoch + 1, 0
            self.epoch, self._start, self._drawn = epoch, drawn, (epoch, drawn)
            return
        want = {"n_batches": self.n_batches, **self.identity}
        diffs = [f"{k}: state has {state.get(k)!r}, these batches {v!r}" for k, v in want.items()
                 if state.get(k) != v]
        if diffs:
            raise OptionError("EpochSampler: state saved for other batches: " + "; ".join(diffs))
        epoch, drawn = state_count(state.get("epoch"), "epoch"), state_count(state.get("next_batch"), "next_batch")
        if drawn >= self.n_batches:  # that pass was complete: the next one is the next epoch
            epoch, drawn = epoch + 1, 0
        self.epoch, self._start, self._drawn = epoch, drawn, (epoch, drawn)


class TorchBatches(_TorchDataset[tuple[dict[str, torch.Tensor], dict[str, torch.Tensor], dict[str, torch.Tensor]]]):
    """Whole batches of any batch source as torch tensors.

    Parameters
    ----------
    batches
        A :class:`~lstm_data.batching.epochs.source.BatchSource`: ``Batches``, a
        shard of one, or stored batches (:func:`lstm_data.open_batches`).
    worker_transfer
        How a batch built in a ``DataLoader`` worker process reaches the main
        process: ``"shared"`` (default), through shared-memory buffers the worker
        reuses (Linux; elsewhere ``"torch"``); ``"torch"``, torch's own tensor
        sharing. Either way the main process gets the same tensors.
    threads
        Threads building batches ahead in the process that reads the dataset, the
        reading one included (default 1: none ahead): for a ``DataLoader`` with
        ``num_workers=0``, where keys come in order (the :attr:`sampler`'s, or
        plain ``0, 1, ...``). The kernels release the GIL, so on few cores this is
        the cheap way to build in parallel; ignored in worker processes.
    prefetch_batches
        With ``threads > 1``: batches built ahead at most (default ``2 * threads``).
    nested
        Hand out packed ``Ragged`` inputs (``layout="packed"``) as torch nested
        jagged tensors sharing the packed values: ``True`` for every packed input,
        or a list of their names. Default ``False``: plain ``(T, V)`` tensors.

    Raises
    ------
    ValueError
        A bad ``worker_transfer``, ``threads`` or ``prefetch_batches``, or a name in
        ``nested`` that is not a packed input of the spec.
    """

    def __init__(self, batches: BatchSource, worker_transfer: str = "shared", threads: int = 1,
                 prefetch_batches: int | None = None, nested: bool | list[str] = False) -> None:
        if worker_transfer not in ("shared", "torch"):
            raise ValueError(f"worker_transfer must be 'shared' or 'torch', got {worker_transfer!r}")
        if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
            raise ValueError(f"threads must be an int >= 1, got {threads!r}")
        self.batches = batches
        self.worker_transfer = worker_transfer
        self.threads = int(threads)
        self.prefetch_batches = None if prefetch_batches is None else check_count(prefetch_batches,
                                                                                  "prefetch_batches")
        self._ahead: Ahead | None = None  # the stream of batches built ahead (threads > 1)
        _check_sharded(batches)
        self._sampler: EpochSampler | None = None
        self._served: tuple[int, set[int]] = (-1, set())  # plain keys served at (epoch, {i})
        self._warned = False
        self.nested = _nested_names(batches, nested)
        # NaN padding is known from the spec; NaN values are looked for in the first batch
        self._nan_checked = warn_nan_padding("TorchBatches", batches, _NAN_CONSEQUENCE)

    def __len__(self) -> int:
        return len(self.batches)

    def __getitem__(self, key: int | tuple[int, int],
                    ) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        """Batch ``key`` of the current epoch, or for ``key = (epoch, i)`` batch ``i`` of ``epoch``."""
        if isinstance(key, tuple):
            epoch, index = key
        else:
            self._check_repeat(key)
            epoch, index = self.batches.epoch, check_index(key, len(self))
        if self.worker_transfer == "shared" and _in_worker():  # built in shared memory
            from lstm_data.adapters import torch_slots
            slots = torch_slots.worker_slots()
            seg = slots.arena()
            try:
                built = batch_of(self.batches, index, epoch, arena=None if seg is None else seg.arena)
                self._check_nan(built[0])
                shared, targets, weights = slots.share(built, seg)
                return self._nest(shared), targets, weights
            except BaseException:
                slots.release(seg)  # (share gives back any other segment it claimed)
                raise
        inputs, plain_targets, plain_weights = self._batch(index, epoch)
        self._check_nan(inputs)
        return self._nest(_tensors(inputs)), _tensors(plain_targets), _tensors(plain_weights)

    def __getitems__(self, keys: list[Any]) -> Any:
        """Refused: a ``DataLoader`` that batches (its default ``batch_size=1``) would stack whole batches.

        torch asks a dataset for a list of keys only when the loader collates them into
        one batch, which would add a leading dimension ``(1, B, ...)`` to every tensor.

        Raises
        ------
        OptionError
            Always, naming ``batch_size=None``.
        """
        raise OptionError(f"TorchBatches serves whole batches, but the DataLoader asked for {len(keys)} of them "
                          f"at once to collate (its default batch_size=1 adds a dimension: (1, B, ...)); "
                          f"make it with DataLoader(TorchBatches(...), batch_size=None), plus "
                          f"sampler=data.sampler to resume and shard")

    def _check_nan(self, inputs: Mapping[str, np.ndarray]) -> None:
        if not self._nan_checked:
            self._nan_checked = True
            warn_nan_values("TorchBatches", self.batches, inputs, _NAN_CONSEQUENCE, stacklevel=3)

    def _nest(self, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """``inputs`` with each packed input named in :attr:`nested` as a nested jagged tensor."""
        for name in self.nested:
            inputs[name] = nested_from_packed(inputs[name], inputs[name + CU_SEQLENS], inputs[name + MAX_SEQLEN])
        return inputs

    def _batch(self, index: int, epoch: int) -> Batch:
        """Batch ``index`` of ``epoch``, from the threads building ahead when there are some."""
        if self.threads == 1 or _loader_worker():
            return batch_of(self.batches, index, epoch)
        if self._ahead is None:
            self._ahead = Ahead(self.batches, self.threads, self.prefetch_batches or 2 * self.threads)
        return self._ahead.get(index, epoch)

    def _check_repeat(self, index: int) -> None:
        """Warn once when a plain key comes back in the same epoch of a shuffled sequence.

        That is a persistent ``DataLoader`` worker (its copy never sees ``set_epoch``)
        or a loop that forgot ``set_epoch``: every pass would repeat one order.
        """
        if self._warned or not self.batches.varies_by_epoch:
            return
        epoch = self.batches.epoch
        if self._served[0] != epoch:
            self._served = (epoch, set())
        seen = self._served[1]
        if index in seen:
            self._warned = True
            warnings.warn(
                f"TorchBatches: batch {index} served twice in epoch {epoch}: every pass repeats epoch "
                f"{epoch}'s order (persistent_workers=True, or no set_epoch between passes). Pass "
                "sampler=data.sampler to the DataLoader: its keys (epoch, i) give each pass the next "
                "epoch, with any workers", stacklevel=2)
        seen.add(index)

    @property
    def sampler(self) -> EpochSampler:
        """This dataset's :class:`EpochSampler` (one per dataset), starting at the current epoch."""
        if self._sampler is None:
            self._sampler = EpochSampler(len(self), self.batches.epoch, lambda: _identity(self.batches), self.batches)
        return self._sampler

    def set_epoch(self, epoch: int) -> None:
        """Use the row order of ``epoch``.

        Plain keys read it at once (call before creating the epoch's iterator); the
        :attr:`sampler` from its next pass.

        Parameters
        ----------
        epoch
            An int >= 0.
        """
        self.batches.set_epoch(epoch)
        if self._sampler is not None:
            self._sampler.set_epoch(epoch)

    def __getstate__(self) -> dict[str, Any]:
        # the sampler stays in the main process; each copy tracks its own served keys
        return {"batches": self.batches, "worker_transfer": self.worker_transfer, "threads": self.threads,
                "prefetch_batches": self.prefetch_batches, "_ahead": None, "_sampler": None,
                "_served": (-1, set()), "_warned": False, "nested": self.nested,
                "_nan_checked": self._nan_checked}


#: what NaN in an input does in torch
_NAN_CONSEQUENCE = ("every loss computed from it is NaN, masked or not (nan * 0 is nan), and torch "
                    "trains on silently")
#: suffixes of a packed Ragged output's offsets and longest row
CU_SEQLENS, MAX_SEQLEN = "_cu_seqlens", "_max_seqlen"


def nested_from_packed(values: torch.Tensor, cu_seqlens: torch.Tensor,
                       max_seqlen: torch.Tensor | int | None = None) -> torch.Tensor:
    """A torch nested jagged tensor over a packed ``Ragged`` output, without copying its values.

    Parameters
    ----------
    values
        The packed output ``(T, V)``: every row's elements one after another.
    cu_seqlens
        Its ``<name>_cu_seqlens`` ``(B + 1,)``: row ``b`` is ``values[cu[b]:cu[b + 1]]``.
    max_seqlen
        Its ``<name>_max_seqlen`` (the longest row), or ``None`` to leave it unknown.

    Returns
    -------
    torch.Tensor
        A nested tensor of shape ``(B, j, V)`` whose ``values()`` is ``values`` itself;
        ``to_padded_tensor(pad)`` gives the padded batch ``(B, P, V)``.
    """
    top = None if max_seqlen is None else int(max_seqlen)
    nested: torch.Tensor = torch.nested.nested_tensor_from_jagged(values, offsets=cu_seqlens, max_seqlen=top)
    return nested


def _nested_names(batches: BatchSource, nested: bool | list[str]) -> tuple[str, ...]:
    """The packed inputs ``nested`` asks for, checked against ``batches``' spec."""
    packed = [n for n, f in batches.spec.inputs.items() if isinstance(f, Ragged) and not f.form.has_slots]
    if nested is False or nested is None:
        return ()
    if nested is True:
        if not packed:
            raise OptionError("TorchBatches(nested=True): the spec has no packed input (a Ragged field with "
                              "layout='packed') to hand out as a nested tensor")
        return tuple(packed)
    if isinstance(nested, str) or not all(isinstance(n, str) for n in nested):
        raise OptionError(f"TorchBatches: nested must be True, False or a list of input names, got {nested!r}")
    wrong = [n for n in nested if n not in packed]
    if wrong:
        raise OptionError(f"TorchBatches(nested=...): {wrong[0]!r} is not a packed input of the spec "
                          f"(packed inputs: {packed or 'none'}); give its Ragged field layout='packed'")
    return tuple(nested)
