"""``nova_sample.h5``: a small NOvA-style HDF5 file of tables (seeded; the same bytes every time).

The layout is NOvA's HDF5 ntuple convention (HEP_HPC): one group per table, one dataset per
column of shape ``(n, 1)``, every table carrying the slice key ``run, subrun, cycle, evt,
subevt`` and sorted by it. Per-slice tables have one row per slice (``rec.mc.nu`` misses a few
slices, as a table of matched neutrinos does); per-prong tables one row per prong, some slices
having none. The numbers are synthetic; the column names are chosen so that the schema
``nova_sample.toml`` (aliases) gives the names of the spec ``numu_v3.toml``.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

__all__ = ["write_nova_sample", "N_SLICES"]

SEED = 17
N_SLICES = 700
KEYS = ("run", "subrun", "cycle", "evt", "subevt")
PNG = "rec.vtx.elastic.fuzzyk.png"
PNG_VARS = ["calE", "energy", "nhit", "nhitx", "nhity", "nplane", "maxplanecont", "maxplanegap",
            "len", "dir.x", "dir.y", "dir.z", "start.x", "start.y", "start.z", "end.x", "end.y",
            "end.z", "dedx0", "dedx1", "dedx2", "dedx3", "dedx4", "dedx5", "gap", "weightedCalE"]
PNG2D_VARS = ["calE", "energy", "nhit", "nplane", "len", "view", "start.z", "end.z", "dir"]
CVN3D = ["muonid", "electronid", "pionid", "protonid", "photonid", "emid", "hadronid"]
CVN2D = ["muonid", "electronid", "pionid", "protonid"]
INTS = {"nhit": np.uint16, "nhitx": np.uint16, "nhity": np.uint16, "nplane": np.uint16,
        "maxplanecont": np.int16, "maxplanegap": np.int16, "view": np.uint8}


def _slice_keys(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """One run, four subruns, 1-3 slices (subevts) per event, sorted."""
    per_event = rng.integers(1, 4, N_SLICES)
    event = np.repeat(np.arange(N_SLICES), per_event)[:N_SLICES]
    first = np.searchsorted(event, event)
    return {"run": np.full(N_SLICES, 13046, np.uint32),
            "subrun": (event * 4 // (event[-1] + 1)).astype(np.uint32),
            "cycle": np.zeros(N_SLICES, np.int32),
            "evt": (event + 1).astype(np.uint32),
            "subevt": (np.arange(N_SLICES) - first).astype(np.uint16)}


def _column(rng: np.random.Generator, name: str, n: int) -> np.ndarray:
    """Plausible numbers, rounded to 3 significant digits (so that the file compresses)."""
    if name in INTS:
        return rng.integers(0, 2 if name == "view" else 120, n).astype(INTS[name])
    if name.endswith("id"):
        values = rng.random(n)
    elif name.startswith(("dir", "start", "end")):
        values = rng.normal(0, 300 if not name.startswith("dir") else 0.5, n)
    else:
        values = rng.gamma(1.5, 0.3, n)
    return np.asarray(np.float32(values).round(3 - int(np.log10(np.abs(values).max() + 1e-9))))


def _write_table(fh: object, name: str, keys: dict[str, np.ndarray], rows: np.ndarray,
                 columns: dict[str, np.ndarray]) -> None:
    group = fh.create_group(name)  # type: ignore[attr-defined]
    for col, data in {**{k: v[rows] for k, v in keys.items()}, **columns}.items():
        group.create_dataset(col, data=data[:, None], chunks=(min(len(data), 4096), 1), maxshape=(None, 1),
                             compression="gzip", compression_opts=6, shuffle=True)


def write_nova_sample(path: str | os.PathLike[str]) -> Path:
    """Write the NOvA-style sample (700 slices) to ``path``, through a temporary name.

    Parameters
    ----------
    path
        The HDF5 file to write.

    Returns
    -------
    Path
        ``path``.
    """
    import h5py

    path = Path(path)
    rng = np.random.default_rng(SEED)
    keys = _slice_keys(rng)
    every = np.arange(N_SLICES)
    png_rows = np.repeat(every, rng.poisson(2.2, N_SLICES))
    png2d_rows = np.repeat(every, rng.poisson(1.0, N_SLICES))
    matched = np.sort(rng.choice(N_SLICES, N_SLICES - 40, replace=False))
    tmp = path.with_name(path.name + ".tmp")
    try:
        with h5py.File(tmp, "w", libver="latest") as fh:
            _write_table(fh, "rec.slc", keys, every, {"calE": _column(rng, "calE", N_SLICES),
                                                      "nhit": _column(rng, "nhit", N_SLICES)})
            _write_table(fh, "rec.energy.numu.lstm", keys, every, {
                c: _column(rng, c, N_SLICES) for c in ("remPngCalE", "orphCalE", "coarseTiming", "lowGain")})
            _write_table(fh, "rec.mc.nu", keys, matched, {"E": _column(rng, "E", len(matched)),
                                                          "lepE": _column(rng, "lepE", len(matched))})
            for table, rows, names, cvn in ((PNG, png_rows, PNG_VARS, CVN3D),
                                            (PNG + "2d", png2d_rows, PNG2D_VARS, CVN2D)):
                idx = (np.arange(len(rows)) - np.searchsorted(rows, rows)).astype(np.uint32)
                _write_table(fh, table, keys, rows, {**{c: _column(rng, c, len(rows)) for c in names},
                                                     table + "_idx": idx})
                _write_table(fh, table + ".cvnpart", keys, rows, {**{c: _column(rng, c, len(rows)) for c in cvn},
                                                                  table + "_idx": idx})
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path
