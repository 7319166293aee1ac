"""NOvA HDF5 tables: our open against a pandas groupby-on-keys converter, and its peak memory.

The file looks like a NOvA numu ntuple (the HEP_HPC layout, one group per table, ``(n, 1)``
column datasets, gzip, 16384-row chunks): per-slice tables ``rec.slc``,
``rec.energy.numu`` (missing for 8% of slices), ``rec.sel.cvn`` and ``rec.mc.nu``;
per-prong tables ``rec.vtx.elastic.fuzzyk.png`` (3 prongs per slice on average,
zero-prong slices included; uint16/uint32/int16/float32/float64 columns) and its
``.cvnpart`` scores, and ``rec.vtx.elastic.fuzzyk.png2d``; 1M slices and 3M prongs
(quick mode: 40k slices; the ratio grows with the file, as our fixed costs are shared).

Rows (stage ``formats``):

* ``NOvA HDF5 open vs pandas groupby converter``: the converter users write today
  (each table read with h5py into a ``DataFrame``, per-slice tables merged on the
  keys, each prong table ``groupby(keys).apply(to_numpy)`` into one array per slice,
  left-joined to the slices; the fastest such per-group converter we timed:
  ``agg(list)`` is ~3x slower) over :func:`lstm_data.io.nova.read_nova` of the
  same file, the median of per-round ratios of interleaved runs (higher is better, target >= 20);
* ``NOvA HDF5 open vs vectorised pandas`` (full mode only): the careful converter
  (group sizes by ``groupby(keys).size()``, merged to the slices, values as one
  array), reported without a floor: both are bound by the same gzip inflation;
* ``NOvA open peak RSS / (1.5 x columnar + 64 MB)``: ``VmHWM`` of a fresh process
  that opens the file, over the budget (lower is better, <= 1.0).

Run alone: ``python -m bench.formats_nova [--quick]``.
"""
from __future__ import annotations

import statistics
import sys
import tempfile
from functools import reduce
from pathlib import Path

import numpy as np

from bench.memory import fresh_process_peak
from bench.timing import Report, interleaved_samples, median_ratio

__all__ = ["run", "write_nova_like", "pandas_groupby_convert", "pandas_vectorised_convert",
           "nova_peak_rss", "PER_SLICE", "PER_PRONG"]

STAGE = "formats"
KEYS = ["run", "subrun", "cycle", "evt", "subevt"]
PNG = "rec.vtx.elastic.fuzzyk.png"
PER_SLICE = ["rec.slc", "rec.energy.numu", "rec.sel.cvn", "rec.mc.nu"]
PER_PRONG = [PNG, PNG + ".cvnpart", PNG + "2d"]
MB = 1e6
_CHUNK = 16384
#: slices of the file (quick mode, full mode)
QUICK_SLICES, FULL_SLICES = 40_000, 1_000_000

_PNG_FLOATS = ["calE", "weightedCalE", "len", "dir.x", "dir.y", "dir.z", "start.x", "start.y",
               "start.z", "dedx0", "dedx1", "dedx2", "dedx3", "gap"]
_PNG_INTS = {"nhit": np.uint16, "nhitx": np.uint16, "nhity": np.uint16, "nplane": np.uint16,
             "maxplanecont": np.int16, "maxplanegap": np.int16}
_CVNPART = ["muonid", "electronid", "pionid", "protonid", "photonid", "emid", "hadronid"]


def _keys(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Sorted slice keys: 2 runs, subruns of ~2000 events, 1-4 slices (subevts) per event."""
    subevts = rng.integers(1, 5, n)
    evt_of = np.repeat(np.arange(n), subevts)[:n]
    sub = (np.arange(n) - np.searchsorted(evt_of, evt_of)).astype(np.uint16)
    return {"run": (12000 + evt_of * 2 // max(1, evt_of[-1] + 1)).astype(np.uint32),
            "subrun": (evt_of // 2000).astype(np.uint32),
            "cycle": ((evt_of // 500) % 4).astype(np.int32),
            "evt": (evt_of + 1).astype(np.uint32), "subevt": sub}


def _write(fh, name: str, keys: dict[str, np.ndarray], rows: np.ndarray | None,
           cols: dict[str, np.ndarray]) -> None:
    g = fh.create_group(name)
    cols = {**{k: v if rows is None else v[rows] for k, v in keys.items()}, **cols}
    for col, data in cols.items():
        data = data.reshape(len(data), -1)
        g.create_dataset(col, data=data, chunks=(min(_CHUNK, max(1, len(data))), data.shape[1]),
                         compression="gzip", compression_opts=4, maxshape=(None, data.shape[1]))


def write_nova_like(path: Path, n_slices: int, seed: int = 0) -> int:
    """Write a NOvA numu-like file of ``n_slices`` slices; returns its prong count."""
    import h5py

    rng = np.random.default_rng(seed)
    keys = _keys(n_slices, rng)
    n = n_slices
    counts = rng.poisson(3.0, n)
    prongs = np.repeat(np.arange(n), counts)
    p = len(prongs)
    counts2 = rng.poisson(1.0, n)
    prongs2 = np.repeat(np.arange(n), counts2)
    have = np.sort(rng.choice(n, n - n * 8 // 100, replace=False))

    def f32(m: int, scale: float = 1.0) -> np.ndarray:
        return rng.gamma(1.5, scale, m).astype(np.float32)

    with h5py.File(path, "w") as fh:
        _write(fh, "rec.slc", keys, None, {"calE": f32(n), "nhit": rng.integers(0, 900, n).astype(
            np.uint16), "ncontplanes": rng.integers(0, 300, n).astype(np.int32),
            "firstplane": rng.integers(0, 900, n).astype(np.uint32)})
        _write(fh, "rec.energy.numu", keys, have, {
            "E": rng.gamma(2, 1.0, len(have)), "hadcalE": f32(len(have)), "calccE": f32(len(have)),
            "trkccE": f32(len(have)), "regcvnhadE": f32(len(have))})
        _write(fh, "rec.sel.cvn", keys, None, {"numuid": rng.random(n).astype(np.float32),
                                               "nueid": rng.random(n).astype(np.float32)})
        _write(fh, "rec.mc.nu", keys, None, {"E": rng.gamma(2, 1.2, n), "pdg": rng.choice(
            [-14, 14, 12], n).astype(np.int32), "isCC": rng.integers(0, 2, n).astype(np.uint8)})
        idx = (np.arange(p) - np.repeat(np.cumsum(counts) - counts, counts)).astype(np.uint32)
        png = {c: f32(p) for c in _PNG_FLOATS}
        png["len"] = rng.gamma(2, 150, p)
        png.update({c: rng.integers(0, 200, p).astype(t) for c, t in _PNG_INTS.items()})
        png.update({"rec.vtx.elastic_idx": np.zeros(p, np.uint32), PNG + "_idx": idx})
        _write(fh, PNG, keys, prongs, png)
        _write(fh, PNG + ".cvnpart", keys, prongs,
               {**{c: rng.random(p).astype(np.float32) for c in _CVNPART}, PNG + "_idx": idx})
        q = len(prongs2)
        _write(fh, PNG + "2d", keys, prongs2, {"calE": f32(q), "len": f32(q, 100), "nhit": rng.integers(
            0, 200, q).astype(np.uint16), "view": rng.integers(0, 2, q).astype(np.uint8)})
    return p


def _frame(fh, table: str):
    import pandas as pd

    g = fh[table]
    return pd.DataFrame({c if c in KEYS else f"{table}.{c}": g[c][:, 0] for c in g})


def _slices(fh):
    frames = [_frame(fh, t) for t in PER_SLICE]
    events = reduce(lambda a, b: a.merge(b, on=KEYS, how="outer"), frames)
    return events.sort_values(KEYS).reset_index(drop=True)


def pandas_groupby_convert(path: Path) -> dict:
    """The converter users write: merge the per-slice tables, ``groupby(keys)`` each prong table.

    Returns ``{"scalars": {name: float32 array}, "groups": {table: (values, offsets)}}``.
    """
    import h5py

    with h5py.File(path, "r") as fh:
        events = _slices(fh)
        groups = {}
        for t in PER_PRONG:
            frame = _frame(fh, t)
            cols = [c for c in frame.columns if c not in KEYS]
            per_slice = frame.groupby(KEYS)[cols].apply(lambda g: g.to_numpy(np.float32))
            cells = events[KEYS].merge(per_slice.rename("cells").reset_index(), on=KEYS,
                                       how="left")["cells"]
            arrays = [c if isinstance(c, np.ndarray) else np.zeros((0, len(cols)), np.float32)
                      for c in cells]
            offsets = np.zeros(len(arrays) + 1, np.int64)
            offsets[1:] = np.cumsum([len(a) for a in arrays])
            groups[t] = (np.concatenate(arrays), offsets)
    scalars = {c: events[c].to_numpy(np.float32) for c in events.columns if c not in KEYS}
    return {"scalars": scalars, "groups": groups}


def pandas_vectorised_convert(path: Path) -> dict:
    """A careful pandas converter: group sizes merged to the slices, values taken as one array."""
    import h5py

    with h5py.File(path, "r") as fh:
        events = _slices(fh)
        groups = {}
        for t in PER_PRONG:
            frame = _frame(fh, t)
            sizes = frame.groupby(KEYS, sort=False).size().rename("n").reset_index()
            n = events[KEYS].merge(sizes, on=KEYS, how="left")["n"].fillna(0).to_numpy(np.int64)
            offsets = np.zeros(len(n) + 1, np.int64)
            offsets[1:] = np.cumsum(n)
            groups[t] = (frame[[c for c in frame.columns if c not in KEYS]].to_numpy(np.float32),
                         offsets)
    scalars = {c: events[c].to_numpy(np.float32) for c in events.columns if c not in KEYS}
    return {"scalars": scalars, "groups": groups}


def nova_peak_rss(path: Path) -> tuple[int, int] | None:
    """``(peak RSS bytes, columnar bytes)`` of a fresh process opening the NOvA file ``path``."""
    return fresh_process_peak(path, "lstm_data.io.nova:read_nova")


def run(quick: bool = False, seed: int = 0, data=None) -> Report:
    """Measure the NOvA rows of the ``formats`` stage (``data`` is not used: the file is made here)."""
    from lstm_data.io.nova import read_nova

    report = Report()
    n_slices = QUICK_SLICES if quick else FULL_SLICES
    repeats = 3
    with tempfile.TemporaryDirectory(prefix="lstm_data_bench_nova_") as tmp:
        path = Path(tmp) / "nova.h5"
        n_prongs = write_nova_like(path, n_slices, seed)
        cases = {"ours": lambda: read_nova(path), "groupby": lambda: pandas_groupby_convert(path)}
        if not quick:
            cases["vectorised"] = lambda: pandas_vectorised_convert(path)
        cases["ours"]()  # warm-up (and the page cache); the converters are not warmed: they are slow
        rounds = interleaved_samples(cases, repeats=repeats, warmup=0, rotate=True)
        t_ours, t_slow = statistics.median(rounds["ours"]), statistics.median(rounds["groupby"])
        label = f"{n_slices} slices, {n_prongs} prongs"
        report.time(STAGE, f"NOvA HDF5 open ({label})", t_ours, items=n_slices, ours=True)
        report.time(STAGE, f"pandas groupby converter ({label})", t_slow, items=n_slices)
        report.ratio(STAGE, "NOvA HDF5 open vs pandas groupby converter", median_ratio(rounds, "groupby", "ours"))
        if "vectorised" in rounds:
            t_vec = statistics.median(rounds["vectorised"])
            report.time(STAGE, f"vectorised pandas converter ({label})", t_vec, items=n_slices)
            report.ratio(STAGE, "NOvA HDF5 open vs vectorised pandas", median_ratio(rounds, "vectorised", "ours"))
        peak = nova_peak_rss(path)
        if peak is not None:
            rss, nbytes = peak
            report.ratio(STAGE, "NOvA open peak RSS / (1.5 x columnar + 64 MB)",
                         rss / (1.5 * nbytes + 64 * MB), kind="max")
    return report


if __name__ == "__main__":  # pragma: no cover
    print(run(quick="--quick" in sys.argv).render())
