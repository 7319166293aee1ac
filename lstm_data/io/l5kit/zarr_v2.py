"""A minimal zarr v2 array reader for 1-D structured arrays (the L5Kit layout).

zarr-python 3 refuses structured dtypes with subarray fields, so we read the
``.zarray`` JSON ourselves and decode chunk files with numcodecs. Decoded chunks
sit in a small LRU cache; :attr:`V2Array.decoded` counts decompressions.

Every problem is a :class:`~lstm_data.errors.FormatError` naming the file:

* ``.zarray``: unreadable JSON, a missing or invalid key (``shape``, ``chunks``,
  ``dtype``, ``compressor``, ``filters``, ``fill_value``, ``order``), an unknown codec;
* a chunk file: undecodable, or not decoding to exactly one full chunk
  (``chunks`` records: zarr v2 stores edge chunks at full size), e.g. a chunk
  of another array or of a store with other chunking. Without filters, a Blosc
  or Zstd chunk's frame headers are compared with that size *before* it is
  decoded (:func:`~lstm_data.io.plumbing.frames.check_decoded_size`): a chunk
  that would inflate to gigabytes is refused unread;
* a missing chunk file when ``fill_value`` is ``null``: zarr writes every chunk of
  such an array (there is no fill value to leave out), so one is lost. With a fill
  value, a missing chunk reads as it, as zarr does.
"""
from __future__ import annotations

import base64
import json
import threading
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np

from lstm_data._util.lru import Lru
from lstm_data.errors import FormatError
from lstm_data.io.plumbing.frames import FrameError, check_decoded_size

__all__ = ["V2Array", "dtype_from_json", "list_v2_arrays"]


def dtype_from_json(spec: Any) -> np.dtype[Any]:
    """A numpy dtype from zarr v2's JSON ``dtype`` (a string or a list of fields)."""
    if isinstance(spec, str):
        return np.dtype(spec)
    fields: list[tuple[Any, np.dtype[Any]] | tuple[Any, np.dtype[Any], tuple[int, ...]]] = []
    for item in spec:
        name, sub = item[0], item[1]
        sub_dtype = dtype_from_json(sub)
        fields.append((name, sub_dtype, tuple(item[2])) if len(item) > 2 else (name, sub_dtype))
    return np.dtype(fields)


def list_v2_arrays(root: Path) -> list[str]:
    """Names of the v2 arrays directly under ``root`` (directories with ``.zarray``)."""
    return sorted(p.name for p in root.iterdir() if (p / ".zarray").is_file())


def _read_meta(file: Path) -> dict[str, Any]:
    """The ``.zarray`` JSON object at ``file``."""
    try:
        meta = json.loads(file.read_text())
    except (OSError, ValueError) as exc:
        raise FormatError(f"cannot read zarr v2 metadata ({exc})", file=str(file)) from None
    if not isinstance(meta, dict):
        raise FormatError(f"zarr v2 metadata is a JSON {type(meta).__name__}, expected an object",
                          file=str(file))
    if meta.get("zarr_format") != 2:
        raise FormatError(f"zarr_format is {meta.get('zarr_format')}, expected 2", file=str(file))
    if meta.get("order", "C") != "C":
        raise FormatError(f"order is {meta.get('order')!r}; only C-order arrays are supported",
                          file=str(file))
    return meta


def _length(meta: dict[str, Any], key: str, minimum: int, file: Path) -> int:
    """The single entry of the 1-D ``meta[key]`` list (``shape`` or ``chunks``), ``>= minimum``."""
    if key not in meta:
        raise FormatError(f"zarr v2 metadata has no {key!r} key", file=str(file))
    value = meta[key]
    if not isinstance(value, list) or len(value) != 1:
        raise FormatError(f"only 1-D arrays are supported, {key} is {value!r}", file=str(file))
    n = value[0]
    if isinstance(n, bool) or not isinstance(n, int) or n < minimum:
        raise FormatError(f"{key} is {value!r}: expected an integer >= {minimum}", file=str(file))
    return n


def _dtype(meta: dict[str, Any], file: Path) -> np.dtype[Any]:
    """The array's dtype: fixed-size records of at least one byte."""
    if "dtype" not in meta:
        raise FormatError("zarr v2 metadata has no 'dtype' key", file=str(file))
    try:
        dtype = dtype_from_json(meta["dtype"])
    except (TypeError, ValueError, IndexError, KeyError) as exc:
        raise FormatError(f"dtype {meta['dtype']!r} is not a valid numpy dtype ({exc})",
                          file=str(file)) from None
    if dtype.hasobject or dtype.itemsize == 0:
        raise FormatError(f"dtype {meta['dtype']!r} is not supported (objects or zero-size "
                          f"records)", file=str(file))
    return dtype


def _codec(config: Any, what: str, file: Path) -> numcodecs.abc.Codec:
    """The numcodecs codec of ``config`` (``what``: ``compressor`` or ``filter k``)."""
    try:
        return numcodecs.get_codec(config)
    except Exception as exc:  # noqa: BLE001 - unknown id, bad parameters, not a dict...
        raise FormatError(f"{what} {config!r} is unknown or invalid "
                          f"({type(exc).__name__}: {exc})", file=str(file)) from None


def _codecs(meta: dict[str, Any], file: Path) -> tuple[Any, list[numcodecs.abc.Codec]]:
    """``(compressor or None, filters)`` of the metadata."""
    compressor = meta.get("compressor")
    compressor = _codec(compressor, "compressor", file) if compressor is not None else None
    filters = meta.get("filters") or []
    if not isinstance(filters, list):
        raise FormatError(f"filters is {filters!r}, expected a list or null", file=str(file))
    return compressor, [_codec(f, f"filter {k}", file) for k, f in enumerate(filters)]


def _fill_value(raw: Any, dtype: np.dtype, file: Path) -> np.ndarray | None:
    """One-record fill value, or ``None`` for ``fill_value: null`` (every chunk is stored)."""
    if raw is None:
        return None
    fill = np.zeros(1, dtype=dtype)
    try:
        if isinstance(raw, str) and dtype.fields:
            fill = np.frombuffer(base64.standard_b64decode(raw), dtype=dtype)[:1].copy()
        elif not dtype.fields:
            fill[0] = raw
    except (TypeError, ValueError, OverflowError) as exc:
        raise FormatError(f"fill_value {raw!r} does not fit dtype {dtype} ({exc})",
                          file=str(file)) from None
    if len(fill) != 1:
        raise FormatError(f"fill_value {raw!r} is shorter than one {dtype.itemsize}-byte record",
                          file=str(file))
    return fill


class V2Array:
    """One 1-D zarr v2 array on a local directory store.

    Parameters
    ----------
    path
        The array directory (holding ``.zarray``).
    cache_chunks
        Decoded chunks kept in an LRU cache.

    Raises
    ------
    FormatError
        The ``.zarray`` metadata is unreadable, invalid or unsupported (naming the
        file and the key).
    """

    def __init__(self, path: str | Path, *, cache_chunks: int = 4) -> None:
        self.path = Path(path)
        file = self.path / ".zarray"
        meta = _read_meta(file)
        self.shape = (_length(meta, "shape", 0, file),)
        self.chunk_len = _length(meta, "chunks", 1, file)
        self.dtype = _dtype(meta, file)
        self._compressor, self._filters = _codecs(meta, file)
        self._fill = _fill_value(meta.get("fill_value"), self.dtype, file)
        self._cache: Lru[int, np.ndarray] = Lru(cache_chunks)
        self._lock = threading.Lock()
        #: chunks decompressed so far
        self.decoded = 0

    def __len__(self) -> int:
        return self.shape[0]

    @property
    def n_chunks(self) -> int:
        return -(-self.shape[0] // self.chunk_len)

    def _raw(self, index: int, n: int) -> bytes | np.ndarray:
        """Bytes of chunk file ``index``, or ``n`` fill records when it is legitimately absent."""
        file = self.path / str(index)
        try:
            return file.read_bytes()
        except FileNotFoundError:
            if self._fill is None:
                raise FormatError(f"chunk {index} of array {self.path.name!r} is missing; with "
                                  f"fill_value null every chunk must be stored",
                                  file=str(file)) from None
            return np.repeat(self._fill, n)
        except OSError as exc:
            raise FormatError(f"cannot read chunk {index} of array {self.path.name!r} ({exc})",
                              file=str(file)) from None

    def _decode(self, index: int) -> np.ndarray:
        n = min(self.chunk_len, self.shape[0] - index * self.chunk_len)
        data = self._raw(index, n)
        if isinstance(data, np.ndarray):
            return data
        file, what = self.path / str(index), f"chunk {index} of array {self.path.name!r}"
        expected = self.chunk_len * self.dtype.itemsize
        if self._compressor is not None and not self._filters:  # the frame's account, before decoding
            try:
                check_decoded_size(str(self._compressor.codec_id), data, expected,
                                   f" ({self.chunk_len} records of {self.dtype.itemsize} bytes)")
            except FrameError as exc:
                raise FormatError(f"{what} {exc}: the chunk file is damaged or belongs to another "
                                  "array", file=str(file)) from None
        try:
            if self._compressor is not None:
                data = self._compressor.decode(data)
            for f in reversed(self._filters):
                data = f.decode(data)
            raw = np.frombuffer(data, dtype=np.uint8)
        except Exception as exc:  # noqa: BLE001 - any codec failure means a damaged chunk
            raise FormatError(f"cannot decode {what} ({type(exc).__name__}: {exc})",
                              file=str(file)) from None
        if raw.nbytes != expected:
            raise FormatError(f"{what} decodes to {raw.nbytes} bytes, expected {expected} "
                              f"({self.chunk_len} records of {self.dtype.itemsize} bytes): the "
                              f"chunk file is damaged or belongs to another array",
                              file=str(file))
        with self._lock:
            self.decoded += 1
        return raw.view(self.dtype)[:n]

    def chunk(self, index: int) -> np.ndarray:
        """Decoded records of chunk ``index`` (cached)."""
        with self._lock:
            hit = self._cache.get(index)
        if hit is not None:
            return hit
        records = self._decode(index)
        with self._lock:
            self._cache.put(index, records)
        return records

    def read(self, lo: int, hi: int) -> np.ndarray:
        """Records ``lo:hi``, decoding each chunk they cover once."""
        if hi <= lo:
            return np.zeros(0, dtype=self.dtype)
        first, stop = lo // self.chunk_len, -(-hi // self.chunk_len)
        parts = [self.chunk(c) for c in range(first, stop)]
        joined = parts[0] if len(parts) == 1 else np.concatenate(parts)
        base = first * self.chunk_len
        return joined[lo - base:hi - base]
