"""A minimal zarr v2 array reader for 1-D structured arrays (L5Kit, design §5).

zarr-python 3 refuses structured dtypes with subarray fields, so we read the
``.zarray`` JSON ourselves and decode chunk files with numcodecs. Decoded chunks
sit in a small LRU cache; :attr:`V2Array.decoded` counts decompressions.
"""
from __future__ import annotations

import base64
import json
import threading
from collections import OrderedDict
from pathlib import Path

import numcodecs
import numpy as np

from ..errors import FormatError

__all__ = ["V2Array", "dtype_from_json", "list_v2_arrays"]


def dtype_from_json(spec) -> np.dtype:
    """A numpy dtype from zarr v2's JSON ``dtype`` (a string or a list of fields)."""
    if isinstance(spec, str):
        return np.dtype(spec)
    fields = []
    for item in spec:
        name, sub = item[0], item[1]
        sub_dtype = dtype_from_json(sub)
        fields.append((name, sub_dtype, tuple(item[2])) if len(item) > 2 else (name, sub_dtype))
    return np.dtype(fields)


def list_v2_arrays(root: Path) -> list[str]:
    """Names of the v2 arrays directly under ``root`` (directories with ``.zarray``)."""
    return sorted(p.name for p in root.iterdir() if (p / ".zarray").is_file())


class V2Array:
    """One 1-D zarr v2 array on a local directory store.

    Parameters
    ----------
    path
        The array directory (holding ``.zarray``).
    cache_chunks
        Decoded chunks kept in an LRU cache.
    """

    def __init__(self, path: str | Path, *, cache_chunks: int = 4) -> None:
        self.path = Path(path)
        try:
            meta = json.loads((self.path / ".zarray").read_text())
        except (OSError, ValueError) as exc:
            raise FormatError(f"cannot read zarr v2 metadata ({exc})", file=str(self.path)) from None
        if meta.get("zarr_format") != 2:
            raise FormatError(f"zarr_format is {meta.get('zarr_format')}, expected 2",
                              file=str(self.path))
        if len(meta["shape"]) != 1:
            raise FormatError(f"only 1-D arrays are supported, shape is {meta['shape']}",
                              file=str(self.path))
        if meta.get("order", "C") != "C":
            raise FormatError("only C-order arrays are supported", file=str(self.path))
        self.dtype = dtype_from_json(meta["dtype"])
        self.shape = (int(meta["shape"][0]),)
        self.chunk_len = int(meta["chunks"][0])
        self._compressor = numcodecs.get_codec(meta["compressor"]) if meta.get("compressor") else None
        self._filters = [numcodecs.get_codec(f) for f in (meta.get("filters") or [])]
        self._fill = self._fill_value(meta.get("fill_value"))
        self._cache: OrderedDict[int, np.ndarray] = OrderedDict()
        self._cache_size = max(0, cache_chunks)
        self._lock = threading.Lock()
        #: chunks decompressed so far
        self.decoded = 0

    def __len__(self) -> int:
        return self.shape[0]

    @property
    def n_chunks(self) -> int:
        return -(-self.shape[0] // self.chunk_len)

    def _fill_value(self, raw) -> np.ndarray:
        fill = np.zeros(1, dtype=self.dtype)
        if isinstance(raw, str) and self.dtype.fields:
            fill = np.frombuffer(base64.standard_b64decode(raw), dtype=self.dtype)[:1].copy()
        elif raw is not None and not self.dtype.fields:
            fill[0] = raw
        return fill

    def _decode(self, index: int) -> np.ndarray:
        n = min(self.chunk_len, self.shape[0] - index * self.chunk_len)
        file = self.path / str(index)
        if not file.exists():
            return np.repeat(self._fill, n)
        data = file.read_bytes()
        try:
            if self._compressor is not None:
                data = self._compressor.decode(data)
            for f in reversed(self._filters):
                data = f.decode(data)
            records = np.frombuffer(data, dtype=self.dtype)
        except Exception as exc:  # noqa: BLE001 - any codec failure means a damaged chunk
            raise FormatError(f"cannot decode chunk {index} ({exc})", file=str(file)) from None
        if len(records) < n:
            raise FormatError(f"chunk {index} holds {len(records)} records, expected {n}",
                              file=str(file))
        with self._lock:
            self.decoded += 1
        return records[:n]

    def chunk(self, index: int) -> np.ndarray:
        """Decoded records of chunk ``index`` (cached)."""
        with self._lock:
            hit = self._cache.get(index)
            if hit is not None:
                self._cache.move_to_end(index)
                return hit
        records = self._decode(index)
        if self._cache_size:
            with self._lock:
                self._cache[index] = records
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
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
