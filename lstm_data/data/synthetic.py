"""Seeded NOvA-like event tables for tests, benchmarks and examples.

The numu "v3" workload: six slice scalars, two targets, a ``png`` group of 33 3D
prong variables (mostly 1 to 5 prongs, a tail past 20) and a ``png2d`` group of
13 2D prong variables (0 to about 12 prongs).

Every number is a short decimal ``m / 10**d`` held exactly as the nearest
float64; the in-RAM float32 values are ``np.float32`` of it, which is what
``np.float32(float(repr(x)))`` gives, so a CSV written by :func:`write_csv` and
read back yields bitwise-equal arrays.
"""
from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from lstm_data.data.dataset import InMemoryDataset
from lstm_data.data.ragged import RaggedGroup

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

__all__ = ["SLICE_VARS", "TARGET_VARS", "PNG3D_VARS", "PNG2D_VARS", "make_dataset", "write_csv",
           "open_text_for_write"]

SLICE_VARS = ["calE", "remPngCalE", "nHit", "orphCalE", "coarseTiming", "lowGain"]
TARGET_VARS = ["trueE", "trueLepE"]
_PNG3D = ["calE", "energy", "nhit", "nhitx", "nhity", "nplane", "maxplanecont", "maxplanegap",
          "len", "dir.x", "dir.y", "dir.z", "start.x", "start.y", "start.z", "end.x", "end.y",
          "end.z", "cvnpart.muonid", "cvnpart.electronid", "cvnpart.pionid", "cvnpart.protonid",
          "cvnpart.photonid", "cvnpart.emid", "cvnpart.hadronid", "dedx0", "dedx1", "dedx2",
          "dedx3", "dedx4", "dedx5", "gap", "weightedCalE"]
_PNG2D = ["calE", "energy", "nhit", "nplane", "len", "view", "start.z", "end.z", "dir",
          "cvnpart.muonid", "cvnpart.electronid", "cvnpart.pionid", "cvnpart.protonid"]
PNG3D_VARS = [f"png.{v}" for v in _PNG3D]
PNG2D_VARS = [f"png2d.{v}" for v in _PNG2D]


def _quantised(rng: np.random.Generator, n: int, n_vars: int) -> np.ndarray:
    """``n`` records of ``n_vars`` variables with varied scales and signs.

    Each value is ``m / 10**d`` for an integer ``m`` of at most 6 digits, computed
    by one correctly rounded division, so ``float(repr(x)) == x`` and the CSV text
    is short.
    """
    scale_exp = rng.integers(-2, 4, size=n_vars)
    kind = rng.integers(0, 3, size=n_vars)
    out = np.empty((n, n_vars))
    for j in range(n_vars):
        scale = 10.0 ** scale_exp[j]
        if kind[j] == 0:
            x = rng.exponential(scale, n)
        elif kind[j] == 1:
            x = rng.normal(0.0, scale, n)
        else:
            out[:, j] = rng.integers(0, 100, n)
            continue
        d = int(np.clip(3 - scale_exp[j], 0, 6))
        out[:, j] = np.round(x * 10.0 ** d) / 10.0 ** d
    return out


def _multiplicity(rng: np.random.Generator, n: int, kind: str, png_mean: float = 3.0) -> np.ndarray:
    if kind == "png":
        lens = 1 + rng.poisson(png_mean, n)
        tail = rng.random(n) < 0.02
        lens[tail] += rng.poisson(10, int(tail.sum()))
        lens[rng.random(n) < 0.01] = 0
        return np.minimum(lens, 30).astype(np.int64)
    return np.minimum(rng.poisson(1.5, n), 12).astype(np.int64)


def make_dataset(n_rows: int = 100_000, seed: int = 0, *, dtype: DTypeLike = np.float32,
                 exact: bool = False, png_mean: float = 3.0, learnable: bool = False) -> InMemoryDataset:
    """Generate a NOvA-like :class:`~lstm_data.data.dataset.InMemoryDataset`.

    Parameters
    ----------
    n_rows
        Number of events.
    seed
        Seed of the generator; the same seed gives the same data.
    dtype
        Value dtype of the in-RAM columns (float32 by default).
    exact
        Keep float64 columns regardless of ``dtype`` (what :func:`write_csv` writes).
    png_mean
        3D prongs per event are ``1 + Poisson(png_mean)``, plus a 2% tail of
        ``Poisson(10)`` more and 1% empty events, capped at 30: about
        ``png_mean + 1.2`` on average (``png_mean=2`` gives the ~3 of NOvA's
        numu_v3 selection).
    learnable
        Make the targets functions of the event plus noise (``trueE`` of the slice
        energies and the summed prong energy, ``trueLepE`` of the leading prong and
        the prong count), as the shipped sample has them, so a network trained on
        them learns; otherwise they are drawn like the other scalars. Every other
        column is the same either way.

    Returns
    -------
    InMemoryDataset
        The slice scalars, the targets and the ``png`` and ``png2d`` groups.
    """
    rng = np.random.default_rng(seed)
    out_dtype = np.float64 if exact else dtype
    raw = _quantised(rng, n_rows, len(SLICE_VARS) + len(TARGET_VARS))
    raw[:, -2:] = np.abs(raw[:, -2:]) + 0.5
    scalars = {name: raw[:, j].astype(out_dtype) for j, name in enumerate(SLICE_VARS + TARGET_VARS)}
    groups = {}
    for gname, names in (("png", PNG3D_VARS), ("png2d", PNG2D_VARS)):
        lens = _multiplicity(rng, n_rows, gname, png_mean)
        offsets = np.zeros(n_rows + 1, dtype=np.int64)
        np.cumsum(lens, out=offsets[1:])
        values = _quantised(rng, int(offsets[-1]), len(names)).astype(out_dtype)
        groups[gname] = RaggedGroup(names, values, offsets)
    if learnable:
        targets = _targets(np.random.default_rng([seed, 1]), raw, groups["png"])
        for j, name in enumerate(TARGET_VARS):
            scalars[name] = targets[:, j].astype(out_dtype)
    return InMemoryDataset(scalars, groups)


def _robust(x: np.ndarray) -> np.ndarray:
    """``x`` centred on its median and divided by the half-width of its 16-84% range."""
    if len(x) == 0:
        return x
    lo, mid, hi = (float(q) for q in np.percentile(x, [16, 50, 84]))
    out: np.ndarray = (x - mid) / max(hi - lo, 1e-12) * 2.0
    return out


def _targets(rng: np.random.Generator, slice_raw: np.ndarray, png: RaggedGroup) -> np.ndarray:
    """``trueE`` and ``trueLepE``: energies a network can learn from the event, plus noise.

    ``trueE`` grows with the slice's calorimetric energies and the summed energy of
    its 3D prongs; ``trueLepE`` with the leading prong's energy and the prong count
    (an LSTM over the prongs sees both). Drawn from their own stream, so every other
    column is what it was.
    """
    n = len(slice_raw)
    lens = np.diff(png.offsets)
    e = np.maximum(_robust(png.values[:, 0].astype(np.float64)), -2.0) + 2.0 if len(png.values) else np.zeros(0)
    total = np.zeros(n)
    lead = np.zeros(n)
    has = lens > 0
    starts = png.offsets[:-1][has]
    if len(e):
        total[has] = np.add.reduceat(e, starts)
        lead[has] = np.maximum.reduceat(e, starts)
    s = [_robust(slice_raw[:, j]) for j in range(3)]
    true_e = 1.0 + 0.6 * np.tanh(0.5 * s[0]) + 0.4 * np.tanh(0.5 * s[1]) + 0.15 * total + 0.1 * rng.normal(size=n)
    true_lep = 0.5 + 0.5 * lead + 0.1 * np.minimum(lens, 10) + 0.2 * np.tanh(s[2]) + 0.1 * rng.normal(size=n)
    out: np.ndarray = np.round(np.abs(np.stack([true_e, true_lep], axis=1)) + 0.05, 3)
    return out


def open_text_for_write(path: str | os.PathLike[str], level: int | None = None, *,
                        like: str | os.PathLike[str] | None = None) -> io.TextIOBase:
    """Open ``path`` for writing text, compressed by the extension (.gz, .xz, .bz2) of
    ``like`` (default: ``path`` itself)."""
    p = str(path)
    kind = str(like if like is not None else path)
    if kind.endswith(".gz"):
        return gzip.open(p, "wt", encoding="utf-8", newline="", compresslevel=level or 6)
    if kind.endswith(".xz"):
        return lzma.open(p, "wt", encoding="utf-8", newline="", preset=level if level is not None else 6)
    if kind.endswith(".bz2"):
        return bz2.open(p, "wt", encoding="utf-8", newline="", compresslevel=level or 9)
    return open(p, "w", encoding="utf-8", newline="")


def _texts(column: np.ndarray) -> list[str]:
    """Shortest round-trip text of every float64 in ``column`` (C-speed ``repr``)."""
    if len(column) == 0:
        return []
    return repr(column.tolist())[1:-1].split(", ")


#: number formats of ``write_csv(..., token_mix=True)``, one per column in turn
TOKEN_FORMATS = ("%g", "%.6f", "%.9g", "repr")


def _mixed_texts(column: np.ndarray, fmt: str) -> tuple[list[str], np.ndarray]:
    """Texts of ``column`` as a float32 dump writes them in ``fmt``, and their float64 values.

    The values are first rounded to float32 (detector data); ``repr`` then writes
    the widened float64 in full (up to 17 significant digits), the ``%`` formats
    round it as C's ``printf`` does.
    """
    wide = column.astype(np.float32).astype(np.float64)
    if fmt == "repr":
        return _texts(wide), wide
    texts = [fmt % v for v in wide.tolist()]
    return texts, np.array([float(t) for t in texts])


def _mix_tokens(ds: InMemoryDataset, names: list[str]) -> tuple[InMemoryDataset, dict[str, list[str]]]:
    """``ds`` with every column as its ``TOKEN_FORMATS`` text parses back, and those texts."""
    fmt = {name: TOKEN_FORMATS[j % len(TOKEN_FORMATS)] for j, name in enumerate(names)}
    texts: dict[str, list[str]] = {}
    scalars = {}
    for s in ds.scalar_names:
        texts[s], scalars[s] = _mixed_texts(ds.scalar(s), fmt[s])
    groups = {}
    for g in ds.groups:
        values, offsets = ds.ragged(g)
        values = values.copy()
        for j, name in enumerate(ds.groups[g]):
            texts[name], values[:, j] = _mixed_texts(values[:, j], fmt[name])
        groups[g] = RaggedGroup(ds.groups[g], values, offsets)
    return InMemoryDataset(scalars, groups), texts


def write_csv(path: str | os.PathLike[str], n_rows: int = 100_000, seed: int = 0, *,
              level: int | None = None, dtype: DTypeLike = np.float32,
              token_mix: bool = False, learnable: bool = False) -> InMemoryDataset:
    """Write a lstm_ee-style CSV of a generated dataset and return the dataset.

    Scalars are plain cells; each prong variable is one quoted cell holding a
    comma-separated list (``"0.2,0.334,0.564"``), empty for zero prongs. The
    file is written to a temporary name and renamed when complete. The returned
    dataset holds ``dtype`` columns equal to what a reader must parse.

    With ``token_mix``, the numbers are written as real dumps from C++/ROOT and
    Python writers are: the values rounded to float32, then each column in one
    of :data:`TOKEN_FORMATS` in turn (``%g``, ``%.6f``, ``%.9g``, 17-digit
    ``repr``), so every format has columns. The default (short round-trip texts)
    is what the shipped sample was made with.

    Parameters
    ----------
    path
        The file to write; ``.gz``, ``.xz`` or ``.bz2`` compresses it.
    n_rows, seed
        As for :func:`make_dataset`.
    level
        Compression level (the codec's default when ``None``).
    dtype
        Value dtype of the returned dataset.
    token_mix
        Write the numbers in the spellings of real dumps (see above).
    learnable
        Targets a network can learn (see :func:`make_dataset`); the shipped sample has them.

    Returns
    -------
    InMemoryDataset
        The data written, as a reader of the file must return it.
    """
    ds = make_dataset(n_rows, seed, exact=True, learnable=learnable)
    names = SLICE_VARS + [v for g in ("png", "png2d") for v in ds.groups[g]] + TARGET_VARS
    texts: dict[str, list[str]] = {}
    if token_mix:
        ds, texts = _mix_tokens(ds, names)

    def text(name: str, column: np.ndarray) -> list[str]:
        return texts[name] if name in texts else _texts(column)

    cells: list[list[str]] = [text(s, ds.scalar(s)) for s in SLICE_VARS]
    for g in ("png", "png2d"):
        values, off = ds.ragged(g)
        bounds = list(zip(off[:-1].tolist(), off[1:].tolist()))
        for j, name in enumerate(ds.groups[g]):
            col = text(name, values[:, j])
            cells.append(['"' + ",".join(col[a:b]) + '"' for a, b in bounds])
    cells += [text(s, ds.scalar(s)) for s in TARGET_VARS]
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    try:
        with open_text_for_write(tmp, level, like=target) as fh:
            fh.write(",".join(names) + "\n")
            fh.writelines(",".join(row) + "\n" for row in zip(*cells))
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
    return _cast(ds, dtype)


def _cast(ds: InMemoryDataset, dtype: DTypeLike) -> InMemoryDataset:
    scalars = {s: ds.scalar(s).astype(dtype) for s in ds.scalar_names}
    groups = {g: RaggedGroup(ds.groups[g], ds.ragged(g)[0].astype(dtype), ds.ragged(g)[1])
              for g in ds.groups}
    return InMemoryDataset(scalars, groups)
