"""Numeric TTree branches read basket by basket, straight into their final arrays, on several threads.

uproot gives each branch's basket table (file offset, size and first entry of each
basket). For the common branch kinds, a flat number per entry (``AsDtype``) and a
counted array of numbers (``float x[n]``, ``AsJagged(AsDtype)`` with no per-entry
header), a basket is:

1. read with one ``os.pread`` (no Python file object, so threads do not queue);
2. its ROOT key parsed (key length, uncompressed size) and its compressed blocks
   (ROOT's 9-byte block headers) inflated: zlib blocks with the fastest exact
   inflater installed (libdeflate through the ``deflate`` package, else ISA-L through
   ``isal``, else zlib), LZMA, LZ4 and ZSTD blocks with uproot's own codecs, never to
   more bytes than the key declares, itself checked first against the basket's entries
   (:mod:`~lstm_data.io.root.blocks`);
3. its big-endian numbers written, byte-swapped and cast in one numpy assignment,
   into the rows it owns of the caller's array (a scalar column or one column of a
   group's ``(total, V)`` block); a read on demand writes a chunk's float baskets of a
   group together instead (:mod:`~lstm_data.io.root.group_chunk`).

Every step of a basket releases the GIL for its bulk work (``pread``, the inflaters,
numpy's cast), so a pool of ``threads`` threads keeps every core busy, and memory
holds at most ``threads`` baskets beyond the final arrays. Branches of other kinds
(``std::vector`` with per-entry headers, objects, embedded baskets) are read by the
caller through uproot instead: :func:`plan_branch` returns ``None`` for them.
"""
from __future__ import annotations

import importlib
import os
import struct
import zlib
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from lstm_data.errors import FormatError
from lstm_data.io.columns.exact_ints import check_once
from lstm_data.io.root.arena import thread_arena
from lstm_data.io.root.blocks import inflate_blocks
from lstm_data.io.root.inflate_into import libdeflate_into
from lstm_data.io.root.memory import available_bytes

__all__ = ["BranchPlan", "plan_branch", "inflater_name", "set_inflater", "INFLATERS", "read_basket",
           "basket_bytes", "parse_key", "basket_error", "stores_offsets", "BasketTask", "PieceTask"]

_KEY = struct.Struct(">ihiIhh")
_TBASKET = struct.Struct(">hiiiib")
#: a basket declaring fewer uncompressed bytes than this is inflated without asking the memory left
_ASK_MEMORY = 1 << 24


def _make_inflater(name: str) -> Callable[[Any, int], bytes | bytearray]:
    """``inflate(data, size)`` of the zlib inflater ``name``; ImportError if it is not installed.

    Each fails rather than inflate more than ``size`` bytes.
    """
    if name == "libdeflate":
        import deflate

        def inflate_libdeflate(data: Any, size: int) -> bytearray:
            return deflate.zlib_decompress(data, size)
        return inflate_libdeflate
    if name == "isal":  # imported by name: type checkers need not have the optional package
        isal_zlib = importlib.import_module("isal.isal_zlib")

        def inflate_isal(data: Any, size: int) -> bytes:
            return _bounded(isal_zlib.decompressobj(), data, size)
        return inflate_isal
    if name == "zlib":
        def inflate_zlib(data: Any, size: int) -> bytes:
            return _bounded(zlib.decompressobj(), data, size)
        return inflate_zlib
    raise ValueError(f"no zlib inflater {name!r}; choose one of {', '.join(INFLATERS)}")


def _bounded(inflater: Any, data: Any, size: int) -> bytes:
    """The ``size`` bytes of the zlib stream ``data``, never inflating more than one byte beyond."""
    out: bytes = inflater.decompress(data, size + 1)
    if len(out) > size:
        raise ValueError(f"a block holds more than the {size:,} bytes its header declares")
    return out


#: zlib inflaters, fastest first (measured on ROOT's level-1 baskets: libdeflate, then ISA-L)
INFLATERS = ("libdeflate", "isal", "zlib")
_INFLATER: tuple[str, Callable[[Any, int], bytes | bytearray]] | None = None


def inflater_name() -> str:
    """Which zlib inflater baskets use: ``"libdeflate"``, ``"isal"`` or ``"zlib"``."""
    return _inflater()[0]


def set_inflater(name: str | None) -> str:
    """Use the zlib inflater ``name`` (``None``: the fastest installed); returns its name.

    Raises
    ------
    ImportError
        Its package (``deflate`` for libdeflate, ``isal``) is not installed.
    """
    global _INFLATER
    if name is None:
        _INFLATER = None
        return inflater_name()
    _INFLATER = (name, _make_inflater(name))
    return name


def _inflater() -> tuple[str, Callable[[Any, int], bytes | bytearray]]:
    global _INFLATER
    if _INFLATER is None:
        for name in INFLATERS:
            try:
                _INFLATER = (name, _make_inflater(name))
                break
            except ImportError:
                continue
    assert _INFLATER is not None
    return _INFLATER


@dataclass
class BranchPlan:
    """Where one branch's baskets are and how to decode them.

    Attributes
    ----------
    seeks, sizes, starts, stops : list of int
        Per basket: file offset, bytes on disk, first entry, entry after the last.
    dtype : numpy dtype
        The big-endian dtype of one stored number.
    jagged : bool
        A counted array (values of several entries per basket) or one number per entry.
    header : int
        Bytes before each entry's values (10 for ``std::vector``: byte count, version, size).
    base : int
        The entry that is row 0 of the arrays the baskets are decoded into (a plan of
        the baskets of an entry range; ``starts`` and ``stops`` stay the tree's entries).
    """

    name: str
    seeks: list[int]
    sizes: list[int]
    starts: list[int]
    stops: list[int]
    dtype: np.dtype
    jagged: bool
    header: int = 0
    base: int = 0

    @property
    def compressed_bytes(self) -> int:
        return sum(self.sizes)


def plan_branch(branch: Any, name: str, n_entries: int, uproot: Any) -> BranchPlan | None:
    """The basket plan of a numeric branch this module reads, or ``None`` (read it through uproot)."""
    try:
        interp = branch.interpretation
        header = 0
        if isinstance(interp, uproot.AsJagged):
            if not isinstance(interp.content, uproot.AsDtype):
                return None
            dtype, jagged, header = np.dtype(interp.content.from_dtype), True, int(interp.header_bytes)
        elif isinstance(interp, uproot.AsDtype):
            dtype, jagged = np.dtype(interp.from_dtype), False
        else:
            return None
        if dtype.shape != () or dtype.fields is not None or dtype.kind not in "fiub":
            return None
        if len(branch.embedded_baskets or ()) or branch.member("fEntryOffsetLen") and not jagged:
            return None
        count = int(branch.member("fWriteBasket"))
        seeks = [int(x) for x in branch.member("fBasketSeek")[:count]]
        sizes = [int(x) for x in branch.member("fBasketBytes")[:count]]
        entries = [int(x) for x in branch.member("fBasketEntry")[:count + 1]]
    except Exception:  # anything unusual: uproot's own path reads it, with its own errors
        return None
    if len(entries) < count + 1:
        entries = entries + [n_entries]
    starts, stops = entries[:count], entries[1:count + 1]
    if count and stops[-1] != n_entries or any(s <= 0 for s in sizes):
        return None
    return BranchPlan(name, seeks, sizes, starts, stops, dtype, jagged, header)


def read_basket(fd: int, plan: BranchPlan, i: int, file: str, tree: str,
                room: int | None = None, arena: Callable[[int], np.ndarray] | None = None
                ) -> tuple[memoryview, np.ndarray | None]:
    """The data bytes of basket ``i`` (its numbers) and, for a counted array, the byte offset
    of each entry in them (``None`` when the basket stores none).

    ``arena(n)``: a uint8 array of ``n`` bytes to inflate the basket into (with libdeflate,
    in place: see :mod:`~lstm_data.io.root.inflate_into`); default a new buffer.

    ``room``: the most bytes the basket's values can take (known from its entries, or its
    counter); ``None``: bounded by the memory left. The uncompressed size its key declares
    is checked against it before anything is inflated.

    Raises
    ------
    FormatError
        The key or a compressed block is not what ROOT writes, or the basket declares more
        bytes than it can hold (names file, tree, branch, basket and its entries).
    """
    data, border, keylen = basket_bytes(fd, plan, i, file, tree, room, arena)
    entry_offsets = None
    n = plan.stops[i] - plan.starts[i]
    if stores_offsets(plan, n, data, border):
        entry_offsets = np.empty(n + 1, dtype=np.int64)
        entry_offsets[:n] = np.frombuffer(data, dtype=">i4", count=n, offset=border + 4)
        entry_offsets[:n] -= keylen
        entry_offsets[n] = border
    return memoryview(data)[:border], entry_offsets


def stores_offsets(plan: BranchPlan, n: int, data: Any, border: int) -> bool:
    """Whether a basket of ``n`` entries keeps its entries' offsets after its data end
    ``border`` (``[n + 1]``, then the offset of each entry; a counted array's)."""
    return plan.jagged and len(data) >= border + 4 * (n + 1)


def basket_bytes(fd: int, plan: BranchPlan, i: int, file: str, tree: str, room: int | None = None,
                 arena: Callable[[int], np.ndarray] | None = None) -> tuple[Any, int, int]:
    """Basket ``i`` read, checked and inflated, as :func:`read_basket` reads it: its
    uncompressed bytes (after its key), where its data end in them, and its key's length.

    Raises
    ------
    FormatError
        As :func:`read_basket`.
    """
    seek, size = plan.seeks[i], plan.sizes[i]
    raw = os.pread(fd, size, seek)
    try:
        if len(raw) != size:
            raise ValueError(f"the file ends {size - len(raw)} bytes into it")
        objlen, keylen, border = parse_key(raw, 0, plan, i, room)
        name, inflate = _inflater()
        if arena is None or objlen == size - keylen:
            data: Any = inflate_blocks(raw, keylen, size, objlen, inflate)
        else:
            data = inflate_blocks(raw, keylen, size, objlen, inflate, out=arena(objlen),
                                  into=libdeflate_into() if name == "libdeflate" else None)
    except FormatError:
        raise
    except Exception as exc:
        raise basket_error(plan, i, file, tree, exc) from exc
    return data, border, keylen


def parse_key(raw: Any, at: int, plan: BranchPlan, i: int, room: int | None) -> tuple[int, int, int]:
    """The uncompressed size a key declares (checked: see :func:`_check_declared`), the key's
    length and where the data end, of basket ``i`` of ``plan`` read into ``raw`` at ``at``.

    Raises
    ------
    ValueError
        The key is not what ROOT writes, or declares more bytes than the basket can hold.
    """
    size = plan.sizes[i]
    nbytes, _, objlen, _, keylen, _ = _KEY.unpack_from(raw, at)
    if nbytes != size or not _KEY.size + _TBASKET.size <= keylen <= size:
        raise ValueError(f"its key says {nbytes} bytes and a {keylen}-byte header, the branch {size}")
    # TBasket's own fields end the key: version, buffer size, nev size, nev, fLast, flag
    border = _TBASKET.unpack_from(raw, at + keylen - _TBASKET.size)[4] - keylen
    _check_declared(objlen, size - keylen, plan.stops[i] - plan.starts[i], room)
    if not 0 <= border <= objlen:
        raise ValueError(f"its data end {border} is outside its {objlen} bytes")
    return objlen, keylen, border


def basket_error(plan: BranchPlan, i: int, file: str, tree: str, exc: BaseException) -> FormatError:
    """The error naming basket ``i`` of ``plan`` (file, tree, branch, entries) that ``exc`` made unreadable."""
    return FormatError(f"tree {tree!r}: cannot read basket {i} (entries {plan.starts[i]}:{plan.stops[i]}) "
                       f"of branch {plan.name!r}; damaged file? ({type(exc).__name__}: {exc})",
                       file=file, variable=plan.name, row=plan.starts[i])


def _check_declared(objlen: int, stored: int, entries: int, room: int | None) -> None:
    """Raise ValueError unless ``objlen``, the uncompressed bytes a key declares, can be right.

    A basket holds its values, then (a counted array) one 4-byte offset per entry and two
    counts: at most ``room`` plus those. Without ``room`` a large one must fit in the memory left.
    """
    if objlen == stored:
        return  # stored as it is: nothing to inflate
    if objlen < 0:
        raise ValueError(f"its key declares {objlen:,} uncompressed bytes")
    if room is not None:
        most = room + 4 * (entries + 2)
        if objlen > most:
            raise ValueError(f"its key declares {objlen:,} uncompressed bytes, but its {entries} entries "
                             f"hold at most {most:,}; not inflated")
        return
    left = available_bytes() if objlen > _ASK_MEMORY else None
    if left is not None and objlen > left:
        raise ValueError(f"its key declares {objlen:,} uncompressed bytes, more than the {left:,} this "
                         "process can take; not inflated")


@dataclass
class BasketTask:
    """Decode basket ``i`` of ``plan`` into ``out[lo:hi]`` (``out`` a 1-D array or column view)."""

    plan: BranchPlan
    i: int
    out: np.ndarray
    lo: int
    hi: int

    counts: np.ndarray | None = None

    @property
    def weight(self) -> int:
        """Compressed bytes read (larger tasks run first)."""
        return int(self.plan.sizes[self.i])

    def run(self, fd: int, file: str, tree: str) -> None:
        arena = thread_arena()
        arena.reset()
        try:
            self.out[self.lo:self.hi] = self.values(fd, file, tree, arena=arena.take)
        finally:
            arena.reset()

    def values(self, fd: int, file: str, tree: str,
               arena: Callable[[int], np.ndarray] | None = None) -> np.ndarray:
        """The basket's values (its own dtype, big-endian), checked against its entries and
        the counts; ``arena``: as :func:`read_basket` takes it."""
        room = (self.hi - self.lo) * self.plan.dtype.itemsize
        data, entry_offsets = read_basket(fd, self.plan, self.i, file, tree, room, arena=arena)
        if self.counts is not None:
            self.check_counts(entry_offsets, file, tree)
        return self.checked(data, file, tree)

    def checked(self, data: Any, file: str, tree: str) -> np.ndarray:
        """The values of the basket's data bytes ``data``, checked against its entries (their
        number; integers stored for a float result: each one's exactness)."""
        itemsize = self.plan.dtype.itemsize
        count = self.hi - self.lo
        if len(data) != count * itemsize:
            what = (f"{len(data) // itemsize} values where the counter says {count}" if self.plan.jagged
                    else f"{len(data)} bytes for {count} entries")
            raise FormatError(f"tree {tree!r}: basket {self.i} (entries {self.plan.starts[self.i]}:"
                              f"{self.plan.stops[self.i]}) of branch {self.plan.name!r} holds {what}; "
                              "damaged file?", file=file, variable=self.plan.name,
                              row=self.plan.starts[self.i])
        values = np.frombuffer(data, dtype=self.plan.dtype, count=count)
        if values.dtype.kind in "iu" and self.out.dtype.kind == "f":
            check_once(values, self.out.dtype, self.plan.name, file=file, where="entry",
                       row_of=self._entry_of)
        return values

    def _entry_of(self, k: int) -> int:
        """The entry holding value ``k`` of this basket."""
        start = int(self.plan.starts[self.i])
        if self.counts is None:
            return start + k
        return start + int(np.searchsorted(np.cumsum(self.counts), k, side="right"))

    def check_counts(self, entry_offsets: np.ndarray | None, file: str, tree: str) -> None:
        """Each entry's number of values, from the basket's entry offsets, against the counter."""
        assert self.counts is not None
        start = self.plan.starts[self.i]
        if entry_offsets is None or len(entry_offsets) != len(self.counts) + 1:
            return  # no per-entry offsets stored: the basket's total is checked
        lengths = np.diff(entry_offsets) // self.plan.dtype.itemsize
        bad = np.flatnonzero(lengths != self.counts)
        if len(bad):
            e = start + int(bad[0])
            raise FormatError(f"tree {tree!r}: branch {self.plan.name!r} holds {int(lengths[bad[0]])} values "
                              f"in entry {e} but its counter says {int(self.counts[bad[0]])}; damaged file?",
                              file=file, variable=self.plan.name, row=e)


@dataclass
class PieceTask:
    """Decode basket ``i`` of a jagged ``plan`` on its own: its values (native dtype) and the
    number of values of each entry, from the basket's entry offsets (``std::vector`` entries
    lose their ``header`` bytes). ``values`` stays ``None`` when the basket keeps no entry
    offsets (only a counter branch can then cut it)."""

    plan: BranchPlan
    i: int
    values: np.ndarray | None = None
    lengths: np.ndarray | None = None

    def run(self, fd: int, file: str, tree: str) -> None:
        data, entry_offsets = read_basket(fd, self.plan, self.i, file, tree)
        if entry_offsets is None:
            return
        h, dtype = self.plan.header, self.plan.dtype
        nbytes = np.diff(entry_offsets) - h
        if len(nbytes) and (nbytes.min() < 0 or np.any(nbytes % dtype.itemsize)):
            bad = int(np.flatnonzero((nbytes < 0) | (nbytes % dtype.itemsize != 0))[0])
            raise FormatError(f"tree {tree!r}: entry {self.plan.starts[self.i] + bad} of branch "
                              f"{self.plan.name!r} holds {int(nbytes[bad]) + h} bytes, not a whole number of "
                              f"{dtype.itemsize}-byte values; damaged file?", file=file,
                              variable=self.plan.name, row=self.plan.starts[self.i] + bad)
        raw = np.frombuffer(data, dtype=np.uint8)
        lengths = nbytes // dtype.itemsize
        if h:
            heads = entry_offsets[:-1]
            if h == 10:  # byte count, version, then the vector's size: it must agree
                size = raw[(heads + 6)[:, None] + np.arange(4)].copy().view(">i4").ravel()
                wrong = np.flatnonzero(size != lengths)
                if len(wrong):
                    e = self.plan.starts[self.i] + int(wrong[0])
                    raise FormatError(f"tree {tree!r}: entry {e} of branch {self.plan.name!r} says it "
                                      f"holds {int(size[wrong[0]])} values in {int(nbytes[wrong[0]])} bytes; "
                                      "damaged file?", file=file, variable=self.plan.name, row=e)
            keep = np.ones(len(raw), dtype=bool)
            keep[(heads[:, None] + np.arange(h)).ravel()] = False
            raw = raw[keep]
        self.values = raw.view(dtype).astype(dtype.newbyteorder("="))
        self.lengths = lengths
