"""Batches from ``DataLoader`` worker processes to the main process through reused shared memory.

Why
---
A ``DataLoader`` worker sends each item to the main process pickled. torch's own
transfer moves every tensor of every batch into a new shared-memory file and
passes its file descriptor over a socket (``torch.multiprocessing``, strategy
``file_descriptor``): a numu_v3 batch holds 7 tensors, so each batch costs 7
new files, 7 socket round trips and the page faults of 3.4 MB of fresh memory
on both sides. Measured on a 2-core VM (``lstm-data bench --only consumers``):
about 7 ms per batch against 0.4 ms built in the main process.

How
---
Each worker process keeps a few shared-memory segments (``memfd``), each holding
one batch at a time. A worker claims a free segment as large as its largest batch so far
and builds the next batch right in it (``Batches.batch_into(index, epoch, arena)``: the kernel
writes the padded fields there); what did not fit, or was not built there (a RAM
cache, on-disk blocks, the weights), is copied after it, and a batch that
outgrew the segment moves whole to a larger one. Its tensors are
:class:`SlotTensor`\\ s, which pickle as a reference: segment, generation,
offset, shape. The segment's file descriptor
travels once, with the first batch of each segment; the main process maps it once
and builds every later batch's tensors as views of that mapping (no copy, no
fault). When every tensor of a batch is gone, the main process marks the segment
free in its first word (the worker set it busy), and the worker reuses it. A
worker whose segments are all busy (a consumer keeping batches) starts new ones,
up to :data:`MAX_SEGMENTS`, then gives up its oldest busy one (the main process
keeps it mapped while it holds tensors of it).

The main process keeps the mappings of live workers; those of workers that
exited are dropped when a new worker's first segment arrives. Linux only (memfd,
descriptor passing); elsewhere :data:`AVAILABLE` is false and torch's transfer
is used.
"""
from __future__ import annotations

import itertools
import mmap
import os
import threading
import uuid
import weakref
from multiprocessing.reduction import DupFd, ForkingPickler
from typing import Any, Callable, Mapping, cast

import numpy as np
import torch
from torch.multiprocessing.reductions import reduce_tensor

__all__ = ["AVAILABLE", "MAX_SEGMENTS", "SlotTensor", "worker_slots"]

#: torch's own pickling of a tensor (not annotated in torch): a reconstructing function and its arguments
_reduce_tensor = cast(Callable[[torch.Tensor], tuple[Callable[..., torch.Tensor], tuple[Any, ...]]],
                      reduce_tensor)

#: memfd and descriptor passing exist here
AVAILABLE = hasattr(os, "memfd_create") and hasattr(os, "MFD_CLOEXEC")
#: segments one worker process keeps at most
MAX_SEGMENTS = 8
HEADER = 64  # the state word (0 free, 1 busy), then the arrays at cache-line offsets
ALIGN = 64
GRAIN = 1 << 21  # segment sizes are whole 2 MiB


class SlotTensor(torch.Tensor):
    """A tensor in a worker's shared segment: pickles as a reference to it (worker side only)."""

    #: set on the tensors :meth:`WorkerSlots.share` makes: (lease, offset, bytes, shape, dtype)
    _lstm_data_slot: tuple[_Lease, int, int, tuple[int, ...], str]


class _Lease:
    """One batch's claim on a segment; the pickler reduces it once per batch (its memo)."""

    __slots__ = ("args",)

    def __init__(self, args: tuple[str, int, int, int, Any]) -> None:
        self.args = args

    def __reduce__(self) -> tuple[Callable[..., np.ndarray], tuple[str, int, int, int, Any]]:
        return (_open_lease, self.args)


class _Segment:
    """One shared-memory buffer of a worker (worker side)."""

    def __init__(self, index: int, gen: int, capacity: int) -> None:
        self.index, self.gen, self.capacity = index, gen, capacity
        self.fd = os.memfd_create("lstm_data_batch", os.MFD_CLOEXEC)
        os.ftruncate(self.fd, capacity)
        self.map = mmap.mmap(self.fd, capacity)
        self.state = np.frombuffer(self.map, np.int32, 1, 0)
        self.whole = np.frombuffer(self.map, np.uint8)
        self.address = self.whole.ctypes.data
        self.arena = self.whole[HEADER:]  # where a batch is built (Batches.batch_into)
        self.sent = False  # the descriptor went with a batch
        self.claimed = 0  # when it was last claimed (a counter)

    def close(self) -> None:
        os.close(self.fd)  # the mapping goes with the last view of it


class WorkerSlots:
    """The segments of one worker process."""

    def __init__(self) -> None:
        self.ring = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self.segments: list[_Segment] = []
        self._gen = itertools.count(1)
        self._clock = itertools.count(1)
        self.expected = 0  # bytes of the largest batch shared so far: the next arena's size

    def _claim(self, nbytes: int) -> _Segment:
        free = [s for s in self.segments if s.state[0] == 0]
        fits = [s for s in free if s.capacity >= nbytes]
        if fits:
            seg = fits[0]
        else:
            if free:  # too small: replace it
                index = free[0].index
            elif len(self.segments) < MAX_SEGMENTS:
                index = len(self.segments)
            else:  # all busy: give up the oldest claim (the main process keeps its mapping)
                index = min(self.segments, key=lambda s: s.claimed).index
            seg = _Segment(index, next(self._gen), -(-nbytes // GRAIN) * GRAIN)
            if index < len(self.segments):
                self.segments[index].close()
                self.segments[index] = seg
            else:
                self.segments.append(seg)
        seg.state[0] = 1
        seg.claimed = next(self._clock)
        return seg

    def arena(self) -> _Segment | None:
        """A claimed segment as large as the largest batch shared so far (None before the first):
        build the next batch in its :attr:`_Segment.arena`, then :meth:`share` it with
        ``seg=``. Hand it to :meth:`share` or :meth:`release` it."""
        return self._claim(self.expected) if self.expected else None

    @staticmethod
    def release(seg: _Segment | None) -> None:
        """Give back a segment from :meth:`arena` that holds no batch (its build failed)."""
        if seg is not None:
            seg.state[0] = 0

    def share(self, parts: tuple[Mapping[str, np.ndarray], ...],
              seg: _Segment | None = None) -> tuple[dict[str, torch.Tensor], ...]:
        """The same dicts of :class:`SlotTensor` viewing a segment that holds the arrays of
        ``parts`` (dicts of arrays).

        With ``seg`` (from :meth:`arena`), the arrays built in it stay where they are
        and only the others are copied after them; when those do not fit, every array
        is copied to another segment.
        """
        arrays = [np.asarray(a) for part in parts for a in part.values()]
        placed: list[int | None] = [_offset_in(a, seg) for a in arrays]  # built in seg already
        offsets = list(placed)
        end = max([HEADER] + [o + a.nbytes for o, a in zip(placed, arrays) if o is not None])
        for k, a in enumerate(arrays):
            if offsets[k] is None:
                end = -(-end // ALIGN) * ALIGN
                offsets[k] = end
                end += a.nbytes
        self.expected = max(self.expected, end) if seg is not None else end
        if seg is not None and end > seg.capacity:  # the rest does not fit: start over
            self.release(seg)
            seg = None
        if seg is None:
            placed, offsets, end = [None] * len(arrays), [], HEADER
            for a in arrays:
                offsets.append(end)
                end += -(-a.nbytes // ALIGN) * ALIGN
            seg = self._claim(end)
        try:
            return self._views(parts, arrays, placed, offsets, seg)
        except BaseException:
            self.release(seg)
            raise

    def _views(self, parts: tuple[Mapping[str, np.ndarray], ...], arrays: list[np.ndarray],
               placed: list[int | None], offsets: list[Any], seg: _Segment) -> tuple[dict[str, torch.Tensor], ...]:
        """:meth:`share`'s second half: copy what is not in ``seg`` yet; the tensors."""
        fd = None
        if not seg.sent:
            fd, seg.sent = DupFd(seg.fd), True
        lease = _Lease((self.ring, seg.index, seg.gen, seg.capacity, fd))
        out, k = [], 0
        for part in parts:
            shared: dict[str, torch.Tensor] = {}
            for name in part:
                a, offset = arrays[k], offsets[k]
                if placed[k] is None:  # copied in after what was built there
                    view = seg.whole[offset:offset + a.nbytes].view(a.dtype).reshape(a.shape)
                    np.copyto(view, a)
                    a = view
                t = torch.from_numpy(a).as_subclass(SlotTensor)
                t._lstm_data_slot = (lease, offset, a.nbytes, a.shape, a.dtype.str)
                shared[name] = t
                k += 1
            out.append(shared)
        return tuple(out)


def _offset_in(a: np.ndarray, seg: _Segment | None) -> int | None:
    """Where the C-contiguous array ``a`` lies in ``seg`` (its whole bytes), else None."""
    if seg is None or a.nbytes == 0 or not a.flags.c_contiguous:
        return None
    offset: int = a.__array_interface__["data"][0] - seg.address
    return offset if HEADER <= offset and offset + a.nbytes <= seg.capacity else None


_SLOTS: dict[int, WorkerSlots] = {}


def worker_slots() -> WorkerSlots:
    """This process's :class:`WorkerSlots` (made at first use, one per process)."""
    pid = os.getpid()
    slots = _SLOTS.get(pid)
    if slots is None:
        slots = _SLOTS[pid] = WorkerSlots()
    return slots


def _reduce_slot_tensor(t: SlotTensor) -> tuple[Callable[..., torch.Tensor], tuple[Any, ...]]:
    slot = getattr(t, "_lstm_data_slot", None)
    if slot is None:  # a tensor computed from ours in the worker: torch's own transfer
        return _reduce_tensor(t.as_subclass(torch.Tensor))
    return (_view, slot)


ForkingPickler.register(SlotTensor, _reduce_slot_tensor)


# -- main process -------------------------------------------------------------------------------
_MAPS: dict[tuple[str, int], tuple[int, mmap.mmap]] = {}  # (ring, index) -> (generation, mapping)
_LOCK = threading.Lock()


class _Holder(np.ndarray):
    """A whole segment; every tensor of a batch views it, and its death frees the segment."""


def _release(state: np.ndarray) -> None:
    state[0] = 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _drop_exited() -> None:
    """Forget the mappings of workers that exited (caller holds the lock)."""
    pids = {ring: int(ring.split("-", 1)[0]) for ring, _ in _MAPS}
    for key in [k for k in _MAPS if not _alive(pids[k[0]])]:
        del _MAPS[key]


def _open_lease(ring: str, index: int, gen: int, capacity: int, fd: Any) -> np.ndarray:
    with _LOCK:
        entry = _MAPS.get((ring, index))
        if fd is not None:
            handle = fd.detach()
            try:
                mapping = mmap.mmap(handle, capacity)
            finally:
                os.close(handle)
            if not any(r == ring for r, _ in _MAPS):
                _drop_exited()
            entry = _MAPS[(ring, index)] = (gen, mapping)
        elif entry is None or entry[0] != gen:
            raise RuntimeError(f"lstm_data: batch from worker segment {ring}/{index} generation {gen}, "
                               "which this process never received")
    holder = np.frombuffer(entry[1], np.uint8, capacity, 0).view(_Holder)
    weakref.finalize(holder, _release, np.frombuffer(entry[1], np.int32, 1, 0))
    return holder


def _view(holder: np.ndarray, offset: int, nbytes: int, shape: tuple[int, ...], dtype: str) -> torch.Tensor:
    return torch.from_numpy(holder[offset:offset + nbytes].view(np.ndarray).view(dtype).reshape(shape))
