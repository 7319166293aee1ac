"""What a compressed chunk will inflate to, read from its frame headers before it is decoded.

A few kilobytes of Zstd or Blosc can declare, or decode to, gigabytes: a chunk file
replaced by such a frame must be refused before a codec allocates or fills that
much. Every decoder of a chunk knows the size it must produce (a full chunk), so
:func:`check_decoded_size` compares the frame's own account with it first:

* **Blosc** records the decoded size (``nbytes``) and its own length (``cbytes``)
  in its 16-byte header: both must be right.
* **Zstd** frames may record their decoded size (the frame content size); a frame
  that does not is bounded by walking its blocks (each decodes to at most
  128 KiB, a raw or RLE block to the size in its header). A chunk may hold
  several frames (and skippable ones): every frame is counted. The sum, or the
  bound, must be the expected size (a bound may exceed it by one block: the last
  compressed block of a streamed frame is counted as full).

Failures raise :class:`FrameError`, whose message completes "chunk ... of array
..."; callers turn it into a :class:`~lstm_data.errors.FormatError` naming the
chunk file.
"""
from __future__ import annotations

from typing import Any

__all__ = ["FrameError", "check_decoded_size", "zstd_decoded_bound", "blosc_sizes",
           "BLOSC_HEADER", "ZSTD_BLOCK"]

BLOSC_HEADER = 16
#: the most a Zstd block decodes to
ZSTD_BLOCK = 128 * 1024
_ZSTD_MAGIC = 0xFD2FB528
_SKIPPABLE = range(0x184D2A50, 0x184D2A60)


class FrameError(ValueError):
    """A frame that cannot decode to one chunk; the message completes "chunk i of array a"."""


def blosc_sizes(raw: Any) -> tuple[int, int]:
    """``(decoded bytes, frame bytes)`` read from a Blosc frame's header."""
    if len(raw) < BLOSC_HEADER:
        raise FrameError(f"is {len(raw)} bytes long, shorter than a Blosc header "
                         f"({BLOSC_HEADER} bytes)")
    head = bytes(raw[:BLOSC_HEADER])
    return int.from_bytes(head[4:8], "little"), int.from_bytes(head[12:16], "little")


def _u(raw: Any, pos: int, size: int) -> int:
    if pos + size > len(raw):
        raise FrameError(f"is {len(raw)} bytes long and ends inside a Zstd frame (at byte {pos})")
    return int.from_bytes(bytes(raw[pos:pos + size]), "little")


def _zstd_frame(raw: Any, pos: int) -> tuple[int, bool, int]:
    """``(decoded bytes or their bound, exact, position after the frame)`` of the Zstd frame at ``pos``."""
    descriptor = _u(raw, pos + 4, 1)
    fcs_flag, single, checksum = descriptor >> 6, (descriptor >> 5) & 1, (descriptor >> 2) & 1
    if descriptor & 0x08:
        raise FrameError("has a Zstd frame header with its reserved bit set")
    pos += 5 + (0 if single else 1) + (0, 1, 2, 4)[descriptor & 3]
    fcs_size = ((1 if single else 0), 2, 4, 8)[fcs_flag]
    declared = _u(raw, pos, fcs_size) + (256 if fcs_size == 2 else 0) if fcs_size else None
    pos += fcs_size
    bound = 0
    while True:
        header = _u(raw, pos, 3)
        last, kind, size = header & 1, (header >> 1) & 3, header >> 3
        if kind == 3:
            raise FrameError(f"holds a Zstd block of the reserved type (at byte {pos})")
        bound += ZSTD_BLOCK if kind == 2 else size
        pos += 3 + (1 if kind == 1 else size)
        if last:
            break
    pos += 4 if checksum else 0
    if pos > len(raw):
        raise FrameError(f"is {len(raw)} bytes long and ends inside a Zstd frame")
    return (bound, False, pos) if declared is None else (declared, True, pos)


def zstd_decoded_bound(raw: Any) -> tuple[int, bool]:
    """``(bytes, exact)``: what the Zstd frames in ``raw`` decode to (``exact``: every frame
    declares it), else at most.

    Raises
    ------
    FrameError
        Not Zstd frames, or cut short.
    """
    pos, total, exact = 0, 0, True
    if len(raw) < 4:
        raise FrameError(f"is {len(raw)} bytes long: no Zstd frame")
    while pos < len(raw):
        magic = _u(raw, pos, 4)
        if magic in _SKIPPABLE:
            pos += 8 + _u(raw, pos + 4, 4)
            continue
        if magic != _ZSTD_MAGIC:
            raise FrameError("does not start with a Zstd frame header" if pos == 0 else
                             f"holds bytes that are no Zstd frame (at byte {pos})")
        size, known, pos = _zstd_frame(raw, pos)
        total += size
        exact = exact and known
    return total, exact


def check_decoded_size(codec: str, raw: Any, expected: int, detail: str = "") -> bool:
    """Raise :class:`FrameError` unless the ``codec`` frame ``raw`` decodes to ``expected`` bytes,
    as far as its headers tell: always before decoding it.

    Parameters
    ----------
    codec
        ``"zstd"`` or ``"blosc"`` (any other name is not checked).
    raw
        The frame (bytes-like, without a trailing checksum).
    expected
        Bytes one chunk takes decoded.
    detail
        Said after the expected size in messages (``" (64 records of 24 bytes)"``).

    Returns
    -------
    bool
        Whether the headers declare the decoded size (else it is only bounded: the
        decoded bytes must be counted again).
    """
    if codec == "blosc":
        nbytes, cbytes = blosc_sizes(raw)
        if cbytes != len(raw):
            raise FrameError(f"is {len(raw)} bytes long, but its Blosc header says {cbytes} "
                             "(truncated or not a Blosc frame)")
        if nbytes != expected:
            raise FrameError(f"decodes to {nbytes} bytes, expected {expected}{detail} (as its Blosc "
                             "header declares; refused before decoding)")
        return True
    if codec != "zstd":
        return False
    size, exact = zstd_decoded_bound(raw)
    if exact and size != expected:
        raise FrameError(f"decodes to {size} bytes, expected {expected}{detail} (as its Zstd frame "
                         "headers declare; refused before decoding)")
    if not exact and size > expected + ZSTD_BLOCK:
        raise FrameError(f"holds Zstd frames that can decode to up to {size:,} bytes, expected "
                         f"{expected}{detail}; refused before decoding")
    return exact
