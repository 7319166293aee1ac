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
from importlib import resources
from pathlib import Path

import numpy as np

from lstm_data.data.examples.weaver_jets import make_jets, write_jets

#: the variant config, as the package ships it (``lstm-data example weaver DIR`` writes it too)
VARIANT = (resources.files("lstm_data.data.examples") / "files" / "variant.yaml").read_text()


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
    write_jets(root, make_jets(args.jets, args.seed))
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
