"""ROOT TTree benchmarks: :func:`lstm_data.io.root.read_root` against uproot alone and a naive converter.

The file looks like a CMS NanoAOD skim written by ``uproot``: event branches of
mixed dtypes (``run``, ``event``, ``MET_pt``, ``PV_npvs``, ``genWeight``) and three
zipped collections, ``Muon`` (about 1.2 per event), ``Jet`` (about 5) and
``Electron`` (about 0.8), each with float32 kinematics and int32 flags, counted
by ``nMuon``, ``nJet``, ``nElectron``; zlib-compressed, 10,000-entry clusters.

Measured in one run, interleaved (ratios: medians of per-round ratios):

* ``read_root`` (the whole tree into interleaved groups);
* ``uproot ... .arrays(library="np")`` alone, opened as ``read_root`` opens
  (memory-mapped, no array cache): the read that every converter starts from, so
  the physical limit of this path;
* ``.arrays(library="ak")`` alone: uproot's own decoding, before any numpy
  object per entry; ``read_root`` adds only the interleave to it;
* a naive per-entry converter of the kind users write today: ``arrays(library="np")``,
  then one ``np.stack`` per entry and collection, on a smaller file (it is slow).

Run with the other format rows (``run(quick, seed, data) -> Report``, stage
``formats``); 200,000 entries (naive: 50,000); quick mode: 20,000 (naive: 10,000).
"""
from __future__ import annotations

import statistics
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from bench.timing import Report, interleaved_samples, median_ratio

__all__ = ["run", "write_nano_like", "naive_root_convert", "COLLECTIONS"]

STAGE = "formats"
#: collection -> (mean multiplicity, float32 fields, int32 fields)
COLLECTIONS = {
    "Muon": (1.2, ["pt", "eta", "phi", "mass", "dxy", "dz", "pfRelIso03_all"], ["charge"]),
    "Jet": (5.0, ["pt", "eta", "phi", "mass", "btagDeepFlavB", "qgl", "chEmEF", "neEmEF"],
            ["jetId", "nConstituents"]),
    "Electron": (0.8, ["pt", "eta", "phi", "mass", "dxy", "dz"], ["charge"]),
}
CLUSTER = 10_000


def write_nano_like(path: Path, n: int, seed: int = 0) -> Path:
    """Write the NanoAOD-like tree ``Events`` of ``n`` entries with ``uproot.recreate``."""
    import awkward as ak
    import uproot

    rng = np.random.default_rng(seed)
    cols: dict[str, Any] = {
        "run": np.full(n, 362_000, np.int32) + (np.arange(n) // 50_000).astype(np.int32),
        "event": rng.permutation(n).astype(np.uint64) + np.uint64(10 ** 9),
        "MET_pt": rng.exponential(30.0, n).astype(np.float32),
        "MET_phi": rng.uniform(-np.pi, np.pi, n).astype(np.float32),
        "PV_npvs": rng.poisson(30, n).astype(np.int32),
        "genWeight": rng.normal(1.0, 0.1, n).astype(np.float32),
    }
    for name, (mean, floats, ints) in COLLECTIONS.items():
        counts = rng.poisson(mean, n)
        total = int(counts.sum())
        fields = {f: rng.lognormal(3.0, 1.0, total).astype(np.float32) if f in ("pt", "mass")
                  else rng.normal(0.0, 2.0, total).astype(np.float32) for f in floats}
        fields.update({f: rng.integers(-1, 40, total).astype(np.int32) for f in ints})
        cols[name] = ak.unflatten(ak.zip(fields), counts)
    with uproot.recreate(path) as fh:
        tree = fh.mktree("Events", {k: v.type.content if isinstance(v, ak.Array) else v.dtype
                                    for k, v in cols.items()})
        for a in range(0, n, CLUSTER):
            tree.extend({k: v[a:a + CLUSTER] for k, v in cols.items()})
    return path


def naive_root_convert(path: Path) -> dict[str, Any]:
    """What users write today: uproot's numpy arrays, then one ``np.stack`` per entry and collection."""
    import uproot

    with uproot.open(path) as fh:
        arrays = fh["Events"].arrays(library="np")
    out: dict[str, Any] = {k: v for k, v in arrays.items() if v.dtype != object}
    for name, (_, floats, ints) in COLLECTIONS.items():
        branches = [arrays[f"{name}_{f}"] for f in floats + ints]
        rows, lengths = [], []
        for i in range(len(branches[0])):
            block = np.stack([b[i].astype(np.float32) for b in branches], axis=1)
            rows.append(block)
            lengths.append(len(block))
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        out[name] = (np.concatenate(rows), offsets)
    return out


def _uproot(path: Path, library: str) -> Any:
    """uproot alone, opened as ``read_root`` opens (memory-mapped, no array cache)."""
    import uproot

    with uproot.open(path, array_cache=None, object_cache=None, handler=uproot.MemmapSource) as fh:
        return fh["Events"].arrays(library=library)


def run(quick: bool = False, seed: int = 0, data=None) -> Report:
    """Time the ROOT rows (``data``, a BenchData, is not needed: the file is written here)."""
    from lstm_data.io.root import read_root

    report = Report()
    n = 20_000 if quick else 200_000
    n_naive = 10_000 if quick else 50_000
    with tempfile.TemporaryDirectory(prefix="lstm_data_bench_root_") as tmp:
        big = write_nano_like(Path(tmp) / "nano.root", n, seed)
        small = write_nano_like(Path(tmp) / "nano_small.root", n_naive, seed + 1)
        big_rounds = interleaved_samples({"ours": lambda: read_root(big), "uproot": lambda: _uproot(big, "np"),
                                          "uproot ak": lambda: _uproot(big, "ak")}, repeats=3, warmup=1,
                                         rotate=True)
        small_rounds = interleaved_samples({"ours": lambda: read_root(small),
                                            "naive": lambda: naive_root_convert(small)}, repeats=3, warmup=1,
                                           rotate=True)
    t = {name: statistics.median(v) for name, v in big_rounds.items()}
    s = {name: statistics.median(v) for name, v in small_rounds.items()}
    groups = len(COLLECTIONS)
    report.time(STAGE, f"ROOT open ({n} entries, {groups} groups)", t["ours"], items=n, unit="entries",
                ours=True)
    report.time(STAGE, f"uproot arrays(library='np') ({n} entries)", t["uproot"], items=n, unit="entries")
    report.time(STAGE, f"uproot arrays(library='ak') ({n} entries)", t["uproot ak"], items=n,
                unit="entries")
    report.time(STAGE, f"ROOT open ({n_naive} entries)", s["ours"], items=n_naive, unit="entries", ours=True)
    report.time(STAGE, f"naive per-entry ROOT converter ({n_naive})", s["naive"], items=n_naive,
                unit="entries")
    report.ratio(STAGE, "ROOT open vs uproot arrays(np) alone", median_ratio(big_rounds, "uproot", "ours"))
    report.ratio(STAGE, "ROOT open vs naive per-entry converter", median_ratio(small_rounds, "naive", "ours"))
    report.ratio(STAGE, "ROOT open / uproot arrays(ak) alone", median_ratio(big_rounds, "ours", "uproot ak"),
                 kind="max")
    return report
