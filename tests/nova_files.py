"""NOvA-style HDF5 test files, written with h5py, and an independent reference reading of them.

Layout (the HEP_HPC "ntuple" convention of NOvA's HDF5 files): one group per table, one
dataset per column, shape ``(n, 1)`` (or ``(n, k)``), every table carrying the key columns
``run, subrun, cycle, evt, subevt``, sorted by them.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import h5py
import numpy as np

KEYS = ("run", "subrun", "cycle", "evt", "subevt")
KEY_DTYPES = {"run": np.uint32, "subrun": np.uint32, "cycle": np.int32, "evt": np.uint32,
              "subevt": np.uint16}
PNG = "rec.vtx.elastic.fuzzyk.png"

Tables = dict[str, dict[str, np.ndarray]]


def slice_keys(n_slices: int, rng: np.random.Generator, run0: int = 1000) -> np.ndarray:
    """Sorted unique slice keys, shape ``(n, 5)``: a few runs and subruns, several subevts per event."""
    subevts = rng.integers(1, 4, size=n_slices)
    out = np.zeros((int(subevts.sum()), 5), dtype=np.int64)
    evt = np.repeat(np.arange(len(subevts)), subevts)
    out[:, 0] = run0 + evt * 3 // len(subevts)
    out[:, 1] = (evt // 7) % 5
    out[:, 2] = (evt // 3) % 2
    out[:, 3] = evt * 2 + 1
    out[:, 4] = np.concatenate([np.arange(k) for k in subevts])
    order = np.lexsort(out.T[::-1])
    return out[order][:n_slices]


def _keyed(keys: np.ndarray, counts: np.ndarray | None = None) -> dict[str, np.ndarray]:
    rows = keys if counts is None else np.repeat(keys, counts, axis=0)
    return {k: rows[:, j].astype(KEY_DTYPES[k]) for j, k in enumerate(KEYS)}


def make_tables(n_slices: int = 300, seed: int = 0) -> Tables:
    """Several tables of mixed dtypes: per-slice ones (one with slices missing), per-prong ones
    (zero-prong slices; one sharing the rows of another), (n, 1) and (n, k) columns."""
    rng = np.random.default_rng(seed)
    keys = slice_keys(n_slices, rng)
    n = len(keys)
    t: Tables = {}
    t["rec.slc"] = {**_keyed(keys), "calE": rng.gamma(2, 0.6, n).astype(np.float32),
                    "nhit": rng.integers(0, 60000, n).astype(np.uint16),
                    "ncontplanes": rng.integers(-5, 200, n).astype(np.int32)}
    have = np.sort(rng.choice(n, size=n - n // 6, replace=False))  # slices missing from this table
    m = len(have)
    t["rec.energy.numu"] = {**_keyed(keys[have]), "E": rng.gamma(2, 1.1, m),
                            "hadcalE": rng.gamma(1, 0.3, m).astype(np.float32),
                            "lstmnu": rng.normal(2, 1, (m, 2)).astype(np.float32),
                            "trkccE": np.where(rng.random(m) < 0.1, np.nan, rng.gamma(2, 1, m))}
    t["rec.mc.nu"] = {**_keyed(keys), "E": rng.gamma(2, 1.2, n), "pdg": rng.choice(
        [-14, 14, 12], n).astype(np.int32), "mode": rng.integers(0, 10, n).astype(np.int16),
        "isCC": rng.integers(0, 2, n).astype(np.uint8), "nprim": rng.integers(0, 9, n)}
    counts = rng.poisson(1.6, n)
    counts[:3] = [0, 4, 0]
    p = int(counts.sum())
    idx = np.concatenate([np.arange(c) for c in counts]).astype(np.uint32)
    t[PNG] = {**_keyed(keys, counts), "calE": rng.gamma(1.5, 0.4, p).astype(np.float32),
              "len": rng.gamma(2, 150, p), "nhit": rng.integers(1, 500, p).astype(np.uint16),
              "maxplanegap": rng.integers(-3, 30, p).astype(np.int16),
              "view": rng.integers(0, 3, p).astype(np.uint8),
              "dir": rng.normal(size=(p, 3)).astype(np.float32),
              "id": rng.integers(-2**23, 2**23, p).astype(np.int64),
              "rec.vtx.elastic_idx": np.zeros(p, np.uint32),
              "rec.vtx.elastic.fuzzyk.png_idx": idx}
    t[PNG + ".cvnpart"] = {**_keyed(keys, counts), "muonid": rng.random(p).astype(np.float32),
                           "pionid": rng.random(p),
                           "rec.vtx.elastic.fuzzyk.png_idx": idx}
    counts2 = rng.poisson(0.8, n)
    counts2[0] = 2
    q = int(counts2.sum())
    t["rec.vtx.elastic.fuzzyk.png2d"] = {**_keyed(keys, counts2),
                                         "calE": rng.gamma(1, 0.2, q).astype(np.float32),
                                         "nplane": rng.integers(0, 2**24, q).astype(np.uint32)}
    return t


def write_nova(path: Any, tables: Mapping[str, Mapping[str, np.ndarray]], *, chunk_rows: int = 64,
               compression: str | None = "gzip", fletcher32: bool = False, flat: bool = False) -> Path:
    """Write ``tables`` as NOvA does: 1-D columns as ``(n, 1)`` (``flat``: ``(n,)``), chunked."""
    with h5py.File(path, "w") as fh:
        for name, cols in tables.items():
            g = fh.create_group(name)
            for col, data in cols.items():
                data = np.asarray(data)
                if data.ndim == 1 and not flat:
                    data = data[:, None]
                chunks = (max(1, min(chunk_rows, len(data))),) + data.shape[1:] if len(data) else None
                g.create_dataset(col, data=data, chunks=chunks, fletcher32=fletcher32,
                                 compression=compression if chunks else None,
                                 maxshape=(None,) + data.shape[1:])
    return Path(path)


def reference(path: Any, dtype: Any = np.float32) -> tuple[dict[str, np.ndarray], dict]:
    """What the file holds, built row by row in Python from plain h5py slices.

    Returns ``(scalars, groups)``: scalars by name (keys int64, columns in ``dtype``, NaN
    for a slice missing from a table); groups ``{table: (names, values, offsets)}``.
    """
    dt = np.dtype(dtype)
    with h5py.File(path, "r") as fh:
        data = {t: {c: fh[t][c][...] for c in fh[t]} for t in fh}
    rows: dict[str, dict[tuple, list[int]]] = {}
    for t, cols in data.items():
        by_key: dict[tuple, list[int]] = {}
        for i, key in enumerate(zip(*[cols[k].reshape(-1).tolist() for k in KEYS])):
            by_key.setdefault(key, []).append(i)
        rows[t] = by_key
    per_slice = [t for t in data if all(len(r) == 1 for r in rows[t].values())]
    slices = sorted(set().union(*[rows[t] for t in per_slice]))
    scalars = {k: np.array([s[j] for s in slices], dtype=np.int64) for j, k in enumerate(KEYS)}
    groups = {}
    for t, cols in data.items():
        names, columns = [], []
        for c, arr in cols.items():
            if c in KEYS:
                continue
            arr2 = arr.reshape(len(arr), -1)
            for j in range(arr2.shape[1]):
                names.append(f"{t}.{c}" if arr.ndim == 1 or arr.shape[1] == 1 else f"{t}.{c}[{j}]")
                columns.append(arr2[:, j])
        if t in per_slice:
            for name, col in zip(names, columns):
                out = np.full(len(slices), np.nan, dtype=dt)
                for i, s in enumerate(slices):
                    if s in rows[t]:
                        out[i] = col[rows[t][s][0]]
                scalars[name] = out
        else:
            picked = [rows[t].get(s, []) for s in slices]
            offsets = np.zeros(len(slices) + 1, np.int64)
            offsets[1:] = np.cumsum([len(p) for p in picked])
            flat = [i for p in picked for i in p]
            values = np.stack([np.asarray(col[flat]).astype(dt) for col in columns], axis=1) \
                if columns else np.zeros((len(flat), 0), dt)
            groups[t] = (names, values.reshape(len(flat), len(names)), offsets)
    return scalars, groups
