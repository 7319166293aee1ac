"""``jets.root``: JetClass-like jets in a TTree written by uproot, for weaver-core configs (seeded).

Holds every branch weaver-core's ``JetClass_full.yaml`` names: 16 jagged float32 ``part_*``
branches (one counter ``npart``), 10 float32 ``jet_*`` observers and 10 one-hot ``label_*``
columns. Particle counts follow JetClass (about 40, a tail past the 128 slots, one jet with
none); kinematics are massless particles around the jet axis; two ``part_deta`` values are NaN.
Writing it needs uproot and awkward (``pip install 'lstm_data[root]'``).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from lstm_data.errors import MissingExtraError

__all__ = ["make_jets", "write_jets", "same_jets", "LABELS", "JET"]

LABELS = ["label_QCD", "label_Hbb", "label_Hcc", "label_Hgg", "label_H4q", "label_Hqql", "label_Zqq",
          "label_Wqq", "label_Tbqq", "label_Tbl"]
JET = ["jet_pt", "jet_eta", "jet_phi", "jet_energy", "jet_nparticles", "jet_sdmass", "jet_tau1", "jet_tau2",
       "jet_tau3", "jet_tau4"]


def make_jets(n: int = 200, seed: int = 0) -> dict[str, Any]:
    """JetClass-like columns: ``part`` fields (flat float32) with counts, and per-jet float32 columns.

    Parameters
    ----------
    n
        Jets.
    seed
        Seed of the generator.

    Returns
    -------
    dict
        ``{"part": {field: values}, "counts": particles per jet, "jets": {column: values}}``.
    """
    rng = np.random.default_rng(seed)
    counts = np.clip(rng.negative_binomial(6, 6 / (6 + 40), n), 1, 150)
    counts[rng.choice(n, 4, replace=False)] = rng.integers(130, 150, 4)  # past the 128 slots
    counts[n // 2] = 0  # an empty jet: wrap padding fills it with 0
    total = int(counts.sum())
    jet_pt = rng.uniform(500, 1000, n)
    jet_eta = rng.uniform(-2, 2, n)
    jet_phi = rng.uniform(-np.pi, np.pi, n)
    # momentum fractions: a Dirichlet per jet, drawn as normalised gammas
    z = rng.gamma(0.6, 1.0, total)
    jet_of = np.repeat(np.arange(n), counts)
    z /= np.bincount(jet_of, weights=z, minlength=n)[jet_of]
    pt = z * jet_pt[jet_of]
    deta = rng.normal(0, 0.12, total) / np.sqrt(1 + 20 * z)
    dphi = rng.normal(0, 0.12, total) / np.sqrt(1 + 20 * z)
    eta, phi = jet_eta[jet_of] + deta, jet_phi[jet_of] + dphi
    px, py, pz = pt * np.cos(phi), pt * np.sin(phi), pt * np.sinh(eta)
    energy = np.sqrt(px ** 2 + py ** 2 + pz ** 2)
    kind = rng.choice(5, total, p=[0.55, 0.1, 0.3, 0.03, 0.02])  # ch. hadron, neutral hadron, photon, e, mu
    charged = np.isin(kind, [0, 3, 4])
    charge = np.where(charged, rng.choice([-1.0, 1.0], total), 0.0)
    d0 = np.where(charged, rng.standard_t(3, total) * 0.02, 0.0)
    dz = np.where(charged, rng.standard_t(3, total) * 0.05, 0.0)
    d0err = np.where(charged, rng.gamma(2.0, 0.01, total), 0.0)
    dzerr = np.where(charged, rng.gamma(2.0, 0.02, total), 0.0)
    part = {"px": px, "py": py, "pz": pz, "energy": energy, "deta": deta, "dphi": dphi, "d0val": d0,
            "d0err": d0err, "dzval": dz, "dzerr": dzerr, "charge": charge,
            "isChargedHadron": kind == 0, "isNeutralHadron": kind == 1, "isPhoton": kind == 2,
            "isElectron": kind == 3, "isMuon": kind == 4}
    part = {k: np.asarray(v, dtype=np.float32) for k, v in part.items()}
    part["deta"][rng.choice(total, 2, replace=False)] = np.nan  # a few broken values
    e_jet = np.bincount(jet_of, weights=energy, minlength=n)
    label = rng.integers(0, len(LABELS), n)
    jets = {"jet_pt": jet_pt, "jet_eta": jet_eta, "jet_phi": jet_phi, "jet_energy": np.maximum(e_jet, jet_pt),
            "jet_nparticles": counts, "jet_sdmass": rng.gamma(3.0, 30.0, n),
            **{f"jet_tau{i}": rng.uniform(0, 0.5 / i, n) for i in range(1, 5)},
            **{name: (label == i) for i, name in enumerate(LABELS)}}
    return {"part": part, "counts": counts, "jets": {k: np.asarray(v, dtype=np.float32) for k, v in jets.items()}}


def write_jets(path: str | os.PathLike[str], data: dict[str, Any] | None = None) -> Path:
    """Write jets (default: :func:`make_jets`' 200 jets of seed 0) as the TTree ``tree`` of ``path``.

    Parameters
    ----------
    path
        The ROOT file to write (through a temporary name).
    data
        What :func:`make_jets` returns.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    MissingExtraError
        uproot or awkward is not installed (an ``ImportError``).
    """
    try:
        import awkward as ak
        import uproot
    except ImportError as exc:
        raise MissingExtraError(f"writing jets.root needs uproot and awkward ({exc}): "
                                "pip install 'lstm_data[root]'", extra="root") from None
    data = make_jets() if data is None else data
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    cols = {"part": ak.unflatten(ak.zip(data["part"]), data["counts"]), **data["jets"]}
    try:
        with uproot.recreate(tmp, compression=uproot.ZLIB(9)) as fh:
            tree = fh.mktree("tree", {c: (v.type.content if isinstance(v, ak.Array) else v.dtype)
                                      for c, v in cols.items()})
            tree.extend(cols)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def same_jets(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether two jet files hold the same branches and values (their bytes differ: ROOT files
    carry a random UUID and a timestamp).

    Parameters
    ----------
    a, b
        ROOT files with a tree ``tree``.

    Returns
    -------
    bool
        ``True`` when every branch is equal, NaN where NaN; ``False`` too when either cannot be read.
    """
    import awkward as ak
    import uproot

    try:
        with uproot.open(a) as fa, uproot.open(b) as fb:
            ta, tb = fa["tree"], fb["tree"]
            if sorted(ta.keys()) != sorted(tb.keys()):
                return False
            x, y = ta.arrays(library="ak"), tb.arrays(library="ak")
    except Exception:  # noqa: BLE001 - a damaged or foreign file is not the example
        return False
    return all(bool(ak.all(ak.ravel((x[k] == y[k]) | (np.isnan(x[k]) & np.isnan(y[k])))))
               for k in ta.keys() if k in x.fields)
