"""BatchSpec.from_weaver: weaver-core's data configs, and equality with weaver-core's own preprocessing.

The reference arrays in tests/data/weaver/*.npz are weaver-core 0.5.3's output for
tests/data/weaver/jets.root (regenerate with tools/make_weaver_fixture.py).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import lstm_data
from lstm_data import BatchSpec, Batches, Order, Ragged, Scalars
from lstm_data.batching.spec.weaver import load_weaver_yaml
from lstm_data.errors import SchemaError

pytest.importorskip("yaml")
DATA = Path(__file__).resolve().parents[1] / "data" / "weaver"


@pytest.fixture(scope="module")
def jets():
    pytest.importorskip("uproot")
    return lstm_data.open(DATA / "jets.root")


def reference(config: str) -> dict[str, np.ndarray]:
    with np.load(DATA / f"{config}.npz") as z:
        return {k: z[k] for k in z.files}


def all_batches(ds, spec, batch_size=64):
    b = Batches(ds, spec, Order(batch_size=batch_size, shuffle=False))
    parts = [b[i] for i in range(len(b))]
    inputs = {k: np.concatenate([p[0][k] for p in parts]) for k in parts[0][0]}
    targets = {k: np.concatenate([p[1][k] for p in parts]) for k in parts[0][1]}
    return inputs, targets


def weaver_standardize(x: np.ndarray, center, scale, lo, hi) -> np.ndarray:
    """weaver-core's fused kernel: (x - center) * scale in float32, clipped, NaN kept (made 0 later)."""
    y = (x - np.float32(center)) * np.float32(scale)
    return np.where(np.isnan(y), y, np.minimum(np.maximum(y, np.float32(lo)), np.float32(hi)))


def test_derived_variables_labels_and_observers_equal_weaver_core(jets):
    """Every variable of JetClass_full.yaml, our derived values standardised here as weaver does."""
    cfg = load_weaver_yaml(DATA / "JetClass_full.yaml")
    derived = dict(cfg["new_variables"])
    derived["_label_"] = f"argmax({', '.join(cfg['labels']['value'])})"
    ref = reference("JetClass_full")
    where = {}
    for name, opts in cfg["inputs"].items():
        for j, entry in enumerate(opts["vars"]):
            where[entry[0]] = (name, j, entry[1:])
    names = list(where)
    spec = BatchSpec(inputs={"p": Ragged(names, max_len=128, pad_value=0.0, lengths=True)},
                     targets={"_label_": Scalars(["_label_"]),
                              **{o: Scalars([o], dtype="float64") for o in cfg["observers"]}},
                     derived=derived)
    inputs, targets = all_batches(jets, spec)
    lengths = inputs["p_lengths"]
    assert len(lengths) == len(ref["_label_"]) == 200 and lengths.max() == 128 and lengths.min() == 0
    mask = np.arange(128)[None, :] < lengths[:, None]
    for j, var in enumerate(names):
        name, k, params = where[var]
        ours = inputs["p"][:, :, j]
        if params and params[0] is not None:
            ours = weaver_standardize(ours, *(list(params) + [1, -5, 5][len(params) - 1:])[:4])
        ours = np.nan_to_num(ours, nan=0.0, posinf=np.inf, neginf=-np.inf)
        np.testing.assert_array_equal(ours[mask], ref[name][:, k, :][mask], err_msg=var)
    np.testing.assert_array_equal(targets["_label_"][:, 0], ref["_label_"])
    for obs in cfg["observers"]:
        np.testing.assert_array_equal(targets[obs][:, 0], ref[obs].astype(np.float64), err_msg=obs)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return path


INPUT = "inputs:\n  jet_features:\n    length: null\n    vars: [[jet_pt, null]]\n"


@pytest.mark.parametrize("text, key", [
    ("inptus: {}\n", "inptus"),
    (INPUT + "weights:\n  use_precomputed_weights: true\n  weight_branches: [w]\n", "weights"),
    (INPUT + "bucketing:\n  var: n\n  bins: 4\n", "bucketing"),
    (INPUT + "monitor_variables: [jet_pt]\n", "monitor_variables"),
    (INPUT + "branch_magic: {a: b}\n", "branch_magic"),
    (INPUT + "selection: jet_pt > 1\ntest_time_selection: jet_pt > 2\n", "test_time_selection"),
    ("preprocess:\n  methd: auto\n" + INPUT, "methd"),
    ("inputs:\n  pf:\n    length: 8\n    lenght: 8\n    vars: [a]\n", "lenght"),
    ("inputs:\n  pf:\n    length: 8\n    pad_mode: reflect\n    vars: [a]\n", "reflect"),
    ("inputs:\n  pf_mask:\n    length: 8\n    pad_mode: wrap\n    vars: [[m, null]]\n", "pf_mask"),
    ("inputs:\n  pf:\n    length: 8\n    vars: [[a, 1, 2, 3, 4, 5, 6]]\n", "pad_value"),
    (INPUT + "labels:\n  type: custom\n  value:\n    truth: label.argmax(1)\n", "label.argmax"),
    (INPUT + "labels:\n  type: other\n  value: [a]\n", "labels.type"),
    (INPUT + "new_variables:\n  x: __import__('os').getcwd()\n", "__import__"),
    ("- a\n- b\n", "mapping"),
])
def test_unsupported_or_malformed_configs_name_the_key(tmp_path, text, key):
    with pytest.raises(SchemaError, match=key.replace(".", r"\.")) as err:
        BatchSpec.from_weaver(write(tmp_path, text))
    assert "config.yaml" in str(err.value) or key in ("label.argmax", "__import__")


def test_unknown_key_suggests_the_close_one(tmp_path):
    with pytest.raises(SchemaError, match="did you mean 'inputs'"):
        BatchSpec.from_weaver(write(tmp_path, "inptus: {}\n"))


def test_missing_pyyaml_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "yaml", None)
    with pytest.raises(ImportError, match=r"lstm_data\[weaver\]"):
        BatchSpec.from_weaver(write(tmp_path, INPUT))


def test_per_jet_input_labels_and_observers_map_to_fields(tmp_path):
    text = INPUT + ("labels:\n  type: simple\n  value: [label_QCD, label_Hbb]\nobservers: [jet_eta]\n"
                    "selection: (jet_pt > 600) & (ak.num(part_px) > 2)\n"
                    "new_variables:\n  jet_logpt: np.log(jet_pt)\n")
    spec = BatchSpec.from_weaver(write(tmp_path, text))
    assert spec.inputs == {"jet_features": Scalars(["jet_pt"], squeeze=True)}  # weaver: (B,) for one variable
    assert spec.targets == {"_label_": Scalars(["_label_"], dtype="int64", squeeze=True),
                            "jet_eta": Scalars(["jet_eta"], squeeze=True)}
    sig = spec.signature()
    assert (sig["_label_"].dtype, sig["_label_"].shape) == (np.dtype(np.int64), (None,))
    assert (sig["jet_eta"].dtype, sig["jet_eta"].shape) == (np.dtype(np.float32), (None,))
    assert spec.derived == {"jet_logpt": "np.log(jet_pt)", "_label_": "argmax(label_QCD, label_Hbb)"}
    assert spec.selection == "(jet_pt > 600) & (ak.num(part_px) > 2)" and spec.nan_to == 0.0
    assert "jet_eta" not in BatchSpec.from_weaver(write(tmp_path, text), observers=False).targets


def test_custom_labels_are_class_indices_or_floats(tmp_path):
    text = INPUT + ("labels:\n  type: custom\n  value:\n    cls: np.argmax(label_QCD, label_Hbb)\n"
                    "    mass: jet_sdmass / 2\n")
    spec = BatchSpec.from_weaver(write(tmp_path, text))
    assert spec.targets == {"cls": Scalars(["cls"], dtype="int64", squeeze=True),
                            "mass": Scalars(["mass"], squeeze=True)}
    assert BatchSpec.from_toml(_toml(tmp_path, spec)) == spec


def _toml(tmp_path: Path, spec: BatchSpec) -> Path:
    path = tmp_path / "spec.toml"
    path.write_text(spec.to_toml())
    return path


def test_auto_parameters_equal_weaver_cores_autostandardizer(jets):
    """variant.yaml: selection with ak.num, derived variables, and weaver's auto rule over every selected row."""
    from lstm_data.batching.spec.fitting import auto_parameters

    cfg = load_weaver_yaml(DATA / "variant.yaml")
    spec = BatchSpec(inputs={"j": Scalars(["jet_pt"])}, derived=cfg["new_variables"], selection=cfg["selection"])
    data = spec.derive(jets)
    ref = reference("variant")
    assert len(data) == len(ref["_label_"]) < len(jets)
    for var in ("part_pt_log", "part_deta", "jet_eta"):
        if var in data.scalar_names:
            values = data.scalar(var)
        else:
            values = data.ragged("part")[0][:, data.groups["part"].index(var)]
        assert auto_parameters(values, var) == tuple(ref[f"auto/{var}"]), var


def test_sample_rows_is_seeded_and_sized():
    from lstm_data.batching.spec.fitting import sample_rows

    a, b = sample_rows(1000, 0.1, 3), sample_rows(1000, 0.1, 3)
    np.testing.assert_array_equal(a, b)
    assert len(a) == 100 and np.all(np.diff(a) > 0)
    assert not np.array_equal(a, sample_rows(1000, 0.1, 4))
    np.testing.assert_array_equal(sample_rows(5, 1.0, 0), np.arange(5))
    with pytest.raises(ValueError, match="fraction"):
        sample_rows(5, 0.0, 0)


@pytest.mark.parametrize("config", ["JetClass_full", "variant"])
def test_from_weaver_gives_weaver_cores_tensors(jets, config):
    """Acceptance: every input, the mask, the label and the observers equal weaver-core's arrays."""
    ref = reference(config)
    spec = BatchSpec.from_weaver(DATA / f"{config}.yaml")
    if config == "variant":  # preprocess.method: auto, data_fraction: 1
        spec = spec.fit(jets, fraction=1.0)
        for name, fld in spec.inputs.items():
            for var, std in (fld.standardize or {}).items():
                center, scale = ref[f"auto/{var}"]
                if not np.isnan(center):
                    assert (std.center, std.scale) == (center, scale), var
    inputs, targets = all_batches(jets, spec, batch_size=48)
    names = [k for k in ref if not k.startswith("auto/")]
    assert set(inputs) | set(targets) == set(names)
    sig = spec.signature()
    assert ref["_label_"].dtype == np.int64 and ref["_label_"].ndim == 1  # weaver's label: (B,) int64
    for name in names:
        ours = inputs[name] if name in inputs else targets[name]
        want = ref[name]
        assert (ours.dtype, ours.shape) == (want.dtype, want.shape), name  # dtype and shape, as weaver's
        assert (sig[name].dtype, sig[name].shape[1:]) == (want.dtype, want.shape[1:]), name  # as declared
        bits = f"u{ours.dtype.itemsize}"
        assert np.array_equal(ours.view(bits), want.view(bits)), f"{name}: not bitwise"


def test_from_weaver_on_disk_equals_in_ram(jets, tmp_path):
    path = tmp_path / "jets.h5"
    jets.to_hdf5(path)
    disk = lstm_data.open(path)
    assert not disk.in_ram
    spec = BatchSpec.from_weaver(DATA / "JetClass_full.yaml")
    a, b = all_batches(jets, spec), all_batches(disk, spec)
    for part in (0, 1):
        for k in a[part]:
            assert a[part][k].dtype == b[part][k].dtype and a[part][k].shape == b[part][k].shape, k
            np.testing.assert_array_equal(a[part][k], b[part][k], err_msg=k)
    assert b[1]["_label_"].dtype == np.int64 and b[1]["_label_"].ndim == 1


def test_spec_file_round_trip_and_fit_written_back(jets, tmp_path):
    from lstm_data.batching.spec.fit_file import fit_spec_file

    spec = BatchSpec.from_weaver(DATA / "variant.yaml")
    path = tmp_path / "spec.toml"
    path.write_text(spec.to_toml() + '\n[order]\nbatch_size = 48\n')
    assert BatchSpec.from_toml(path) == spec
    fitted = fit_spec_file(path, jets, fraction=0.5, seed=4)
    assert BatchSpec.from_toml(path) == fitted == spec.fit(jets, fraction=0.5, seed=4)
    assert "auto" not in path.read_text() and "[order]" in path.read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["spec.toml"]  # no temporary left
    std = fitted.inputs["pf_features"].standardize["part_pt_log"]
    assert isinstance(std.center, float) and isinstance(std.scale, float)


def test_fit_on_disk_equals_fit_in_ram(jets, tmp_path, monkeypatch):
    import lstm_data.batching.spec.fitting as fit

    path = tmp_path / "jets.h5"
    jets.to_hdf5(path)
    disk = lstm_data.open(path)
    monkeypatch.setattr(fit, "FIT_BLOCK", 13)  # many blocks of the streaming pass
    spec = BatchSpec.from_weaver(DATA / "variant.yaml")
    assert spec.fit(disk, fraction=0.3, seed=2) == spec.fit(jets, fraction=0.3, seed=2)
    assert spec.fit(jets, fraction=0.3, seed=2) != spec.fit(jets, fraction=0.3, seed=3)


def test_config_with_fitted_params_reads_those_numbers(jets, tmp_path):
    """A config weaver-core wrote after its auto fit (preprocess.params) gives the fitted spec."""
    import yaml

    cfg = load_weaver_yaml(DATA / "variant.yaml")
    ref = reference("variant")
    fitted = BatchSpec.from_weaver(DATA / "variant.yaml").fit(jets, fraction=1.0)
    params = {}
    for name, opts in cfg["inputs"].items():
        for entry in opts["vars"]:
            entry = entry if isinstance(entry, list) else [entry]
            center, scale = (float(x) for x in ref[f"auto/{entry[0]}"])
            lo, hi, pad = (list(entry[3:6]) + [-5, 5, 0][len(entry[3:6]):])
            params[entry[0]] = {"length": opts["length"], "pad_mode": opts.get("pad_mode", "constant"),
                                "center": None if np.isnan(center) else center, "scale": scale,
                                "min": lo, "max": hi, "pad_value": pad}
    cfg["preprocess"]["params"] = params
    path = tmp_path / "fitted.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    assert BatchSpec.from_weaver(path) == fitted


def test_cli_fit_writes_the_numbers_into_the_spec_file(jets, tmp_path, capsys):
    from lstm_data.cli import main

    spec = BatchSpec.from_weaver(DATA / "variant.yaml")
    path = tmp_path / "spec.toml"
    path.write_text(spec.to_toml())
    assert main(["fit", str(path), "--data", str(DATA / "jets.root"), "--fraction", "0.5", "--seed", "4"]) == 0
    assert BatchSpec.from_toml(path) == spec.fit(lstm_data.open(DATA / "jets.root"), fraction=0.5, seed=4)
    assert "part_pt_log: center = " in capsys.readouterr().out
    assert main(["fit", str(path), "--data", str(DATA / "jets.root")]) == 0  # nothing left to fit
    assert "no \"auto\" standardisation" in capsys.readouterr().out


def test_fit_when_the_selection_keeps_no_row_says_so(jets):
    spec = BatchSpec.from_weaver(DATA / "variant.yaml")
    none = spec.replace(selection="jet_pt < -1")
    with pytest.raises(SchemaError, match=r"selection 'jet_pt < -1' keeps no row"):
        none.fit(jets)


UNEQUAL = """
treename: tree
new_variables:
  is_a: label
  is_b: 1 - label
preprocess:
  method: manual
inputs:
  pf:
    length: 6
    pad_mode: {mode}
    vars:
      - [part_px, 1.0, 2.0]
      - [part_deta, null]
      - [part_py, null]
labels:
  type: simple
  value: [is_a, is_b]
"""


@pytest.mark.peers
@pytest.mark.parametrize("mode", ["wrap", "constant"])
def test_an_input_of_unequal_counts_equals_weaver_cores_tensors(tmp_path, mode):
    """weaver-core pads each variable by its own count: an input mixing jagged branches of other
    counts (uproot gives each its own counter) is bitwise weaver-core's, computed here by weaver-core."""
    ak = pytest.importorskip("awkward")
    uproot = pytest.importorskip("uproot")
    pytest.importorskip("weaver.utils.dataset")
    from weaver.utils.data.config import DataConfig
    from weaver.utils.dataset import _load_next

    rng = np.random.default_rng(5)
    n = 60
    short, long_ = rng.poisson(4, n), rng.poisson(8, n)
    short[::7] = 0
    cols = {"part_px": ak.unflatten(rng.normal(size=short.sum()).astype(np.float32), short),
            "part_py": ak.unflatten(rng.normal(size=short.sum()).astype(np.float32), short),
            "part_deta": ak.unflatten(rng.normal(size=long_.sum()).astype(np.float32), long_),
            "label": rng.integers(0, 2, n).astype(np.float32)}
    path = tmp_path / "jets.root"
    with uproot.recreate(path) as fh:
        tree = fh.mktree("tree", {k: v.type.content if isinstance(v, ak.Array) else v.dtype for k, v in cols.items()})
        tree.extend(cols)
    config = tmp_path / "unequal.yaml"
    config.write_text(UNEQUAL.format(mode=mode))
    options = {"training": False, "shuffle": False, "reweight": False, "mode": "test"}
    table, _ = _load_next(DataConfig.load(str(config)), [str(path)], None, options)
    want = np.asarray(table["_pf"])
    ds = lstm_data.open(path)
    assert len(ds.groups) == 2  # part_px and part_py together, part_deta apart
    inputs, _ = all_batches(ds, BatchSpec.from_weaver(config), batch_size=16)
    assert (inputs["pf"].dtype, inputs["pf"].shape) == (want.dtype, want.shape)
    assert inputs["pf"].tobytes() == want.tobytes()
