"""Regenerate tests/data/weaver/: JetClass-like jets and weaver-core's own preprocessing of them.

Writes, into ``--out`` (default ``tests/data/weaver``):

- ``jets.root``: ``--jets`` jets (default 200, seed 0) in a TTree ``tree`` written by
  uproot, holding every branch ``JetClass_full.yaml`` names: 16 jagged float32
  ``part_*`` branches (one counter ``npart``), 10 float32 ``jet_*`` observers and 10
  one-hot ``label_*`` columns. Particle counts follow JetClass (about 40, a tail
  past the 128 slots so truncation is used, one jet with none so wrap padding of
  an empty jet is used); kinematics are massless particles around the jet axis;
  two ``part_deta`` values are NaN (weaver turns NaN into 0 after standardising).
- ``JetClass_full.yaml``: weaver-core's ``test/data/JetClass_full.yaml``, as it is.
- ``variant.yaml``: a config that uses what JetClass_full does not: a ``selection``
  with ``ak.num``, ``auto`` standardisation (``data_fraction: 1``), a constant
  ``pad_value``, and a per-jet input without ``length``.
- ``<config>.npz``: weaver-core's arrays for the jets, in file order, made by its own
  loading code with ``shuffle`` off (``weaver.utils.dataset._load_next``, test mode:
  selection, new variables, labels, observers, then ``_finalize_inputs``: the
  standardisation, clipping, ``wrap``/constant padding and NaN to 0). ``variant.npz``
  also holds the auto parameters weaver-core's ``AutoStandardizer`` computed.

Needs weaver-core (``pip install weaver-core``, or a checkout with ``pip install -e .
--no-deps`` plus numba), uproot and awkward. Run from a checkout::

    python tools/make_weaver_fixture.py [--jets 200] [--weaver-yaml PATH/TO/JetClass_full.yaml]
"""
from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import numpy as np

LABELS = ["label_QCD", "label_Hbb", "label_Hcc", "label_Hgg", "label_H4q", "label_Hqql", "label_Zqq",
          "label_Wqq", "label_Tbqq", "label_Tbl"]
JET = ["jet_pt", "jet_eta", "jet_phi", "jet_energy", "jet_nparticles", "jet_sdmass", "jet_tau1", "jet_tau2",
       "jet_tau3", "jet_tau4"]

VARIANT = """\
selection: (jet_pt > 520) & (ak.num(part_px) > 0)
new_variables:
   part_mask: ak.ones_like(part_energy)
   part_pt: np.hypot(part_px, part_py)
   part_pt_log: np.log(part_pt)
   part_logptrel: np.log(part_pt/jet_pt)
   part_deltaR: np.hypot(part_deta, part_dphi)
   jet_logpt: np.log(jet_pt)
preprocess:
  method: auto
  data_fraction: 1
inputs:
   pf_features:
      length: 64
      pad_mode: constant
      vars:
         - part_pt_log
         - [part_logptrel, null]
         - [part_deltaR, 0.2, 4.0, -5, 5, -1]
         - part_deta
   pf_mask:
      length: 64
      pad_mode: constant
      vars:
         - [part_mask, null]
   jet_features:
      length: null
      vars:
         - [jet_logpt, 6.3, 2.0, -2, 2]
         - jet_eta
labels:
   type: simple
   value: [label_QCD, label_Hbb, label_Hcc, label_Hgg, label_H4q, label_Hqql, label_Zqq, label_Wqq, label_Tbqq,
           label_Tbl]
observers:
   - jet_pt
   - jet_nparticles
"""


def make_jets(n: int, seed: int) -> dict:
    """JetClass-like columns: ``part`` fields (flat float32) with counts, and per-jet float32 columns."""
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


def write_root(path: Path, data: dict) -> None:
    import awkward as ak
    import uproot

    cols = {"part": ak.unflatten(ak.zip(data["part"]), data["counts"]), **data["jets"]}
    with uproot.recreate(path, compression=uproot.ZLIB(9)) as fh:
        tree = fh.mktree("tree", {c: (v.type.content if isinstance(v, ak.Array) else v.dtype) for c, v in cols.items()})
        tree.extend(cols)


def weaver_arrays(files: list[str], config: Path) -> dict[str, np.ndarray]:
    """weaver-core's arrays for ``files`` under ``config``: its own loading code, shuffle off, test mode."""
    from weaver.utils.data.config import DataConfig
    from weaver.utils.data.preprocess import AutoStandardizer
    from weaver.utils.dataset import _load_next

    data_config = DataConfig.load(str(config))
    out: dict[str, np.ndarray] = {}
    if data_config._missing_standardization_info:
        data_config = AutoStandardizer(files, data_config).produce()
        for var, p in data_config.preprocess_params.items():
            out[f"auto/{var}"] = np.array([np.nan if p["center"] is None else p["center"], p["scale"]])
    options = {"training": False, "shuffle": False, "reweight": False, "mode": "test"}
    table, indices = _load_next(data_config, files, None, options)
    assert np.array_equal(indices, np.arange(len(indices))), "weaver-core reordered rows with shuffle off"
    for name in data_config.input_names:
        out[name] = np.asarray(table["_" + name])
    for name in (*data_config.label_names, *data_config.observer_names):
        out[name] = np.asarray(table[name])
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n")[0])
    parser.add_argument("--jets", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "tests/data/weaver")
    parser.add_argument("--weaver-yaml", type=Path, default=None,
                        help="weaver-core's test/data/JetClass_full.yaml (default: the installed checkout's)")
    args = parser.parse_args(argv)
    import weaver

    yaml_path = args.weaver_yaml or Path(weaver.__file__).resolve().parents[1] / "test/data/JetClass_full.yaml"
    args.out.mkdir(parents=True, exist_ok=True)
    root = args.out / "jets.root"
    write_root(root, make_jets(args.jets, args.seed))
    shutil.copyfile(yaml_path, args.out / "JetClass_full.yaml")
    (args.out / "variant.yaml").write_text(VARIANT)
    for config in ("JetClass_full", "variant"):
        arrays = weaver_arrays([str(root)], args.out / f"{config}.yaml")
        np.savez_compressed(args.out / f"{config}.npz", **arrays)
        shapes = {k: list(v.shape) for k, v in arrays.items() if not k.startswith("auto/")}
        print(f"{config}: {json.dumps(shapes)}")
    for f in sorted(args.out.iterdir()):
        print(f"{f.name}: {f.stat().st_size / 1024:.0f} KB")


if __name__ == "__main__":
    main()
