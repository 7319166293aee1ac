"""libdeflate's own C function, called through ``ctypes``, inflating a zlib block in place.

The ``deflate`` package (libdeflate's Python binding) returns each block in a new
``bytearray``: a basket is then written twice (inflated, then copied where it goes)
and every new buffer's pages are faulted in afresh. Its extension module exports
libdeflate's C API, so :func:`libdeflate_into` calls ``libdeflate_zlib_decompress``
itself on the caller's buffer (``ctypes`` releases the GIL for the call), with one
decompressor per thread (a libdeflate decompressor is not shared between threads).
It is ``None`` when that module or its symbols are missing: callers then use the
package's own function and copy. :func:`libdeflate_functions` gives the addresses of
the same C functions to compiled code (a chunk's baskets inflated in one call, see
:mod:`~lstm_data.io.root.chunk_inflate`).
"""
from __future__ import annotations

import ctypes
import threading
from typing import Any

import numpy as np

from lstm_data.io.root.blocks import InflateInto

__all__ = ["libdeflate_into", "libdeflate_functions"]

#: libdeflate's results: success, bad data, fewer bytes than asked, more than room for
_RESULTS = {1: "is not a valid zlib stream", 2: "inflates to fewer bytes than its header declares",
            3: "holds more than the bytes its header declares"}
_MADE: list[InflateInto | None] = []
_FOUND: list[tuple[int, int, int] | None] = []
_NAMES = ("libdeflate_alloc_decompressor", "libdeflate_zlib_decompress", "libdeflate_free_decompressor")


def libdeflate_functions() -> tuple[int, int, int] | None:
    """The addresses of libdeflate's ``alloc_decompressor``, ``zlib_decompress`` and
    ``free_decompressor`` in the installed ``deflate`` package, or ``None`` (found once)."""
    if not _FOUND:
        try:
            import deflate

            lib = ctypes.CDLL(deflate._deflate.__file__)
            found = tuple(ctypes.cast(getattr(lib, name), ctypes.c_void_p).value for name in _NAMES)
        except (ImportError, AttributeError, OSError):
            found = ()
        _FOUND.append((int(found[0]), int(found[1]), int(found[2]))  # type: ignore[arg-type]
                      if len(found) == 3 and all(found) else None)
    return _FOUND[0]


def libdeflate_into() -> InflateInto | None:
    """The in-place zlib inflater of the installed ``deflate`` package, or ``None`` (made once)."""
    if not _MADE:
        _MADE.append(_make())
    return _MADE[0]


def _make() -> InflateInto | None:
    try:
        import deflate

        lib = ctypes.CDLL(deflate._deflate.__file__)
        alloc: Any = lib.libdeflate_alloc_decompressor
        decompress: Any = lib.libdeflate_zlib_decompress
    except (ImportError, AttributeError, OSError):
        return None
    alloc.restype, alloc.argtypes = ctypes.c_void_p, []
    decompress.restype = ctypes.c_int
    decompress.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
                           ctypes.c_void_p]
    mine = threading.local()  # this thread's decompressor, kept while the thread lives

    def into(raw: bytes, pos: int, csize: int, out: np.ndarray, filled: int, usize: int) -> None:
        if pos < 0 or csize < 0 or pos + csize > len(raw) or filled < 0 or filled + usize > out.nbytes:
            raise ValueError("a compressed block lies outside its basket")
        d = getattr(mine, "d", None)
        if d is None:
            d = mine.d = alloc()
            if not d:
                raise MemoryError("libdeflate could not allocate a decompressor")
        src = ctypes.cast(ctypes.c_char_p(raw), ctypes.c_void_p).value
        assert src is not None
        code = decompress(d, src + pos, csize, out.ctypes.data + filled, usize, None)
        if code:
            raise ValueError(f"a zlib block {_RESULTS.get(code, f'fails ({code})')} ({usize:,} bytes)")
    return into
