"""Padding defaults: 0.0 for new specs and version-2 files; NaN kept for version-1 files,
stored specs and from_lstm_ee."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars, open_batches
from lstm_data.batching.spec.version import SPEC_VERSION
from lstm_data.data.synthetic import PNG3D_VARS, SLICE_VARS, make_dataset
from lstm_data.errors import SchemaError, SpecVersionWarning
from lstm_data.io.ours.manifest import write_manifest
from lstm_data.store.write import precompute

V1_FILE = """
[inputs.input_png3d]
type = "ragged"
vars = ["png.calE", "png.len"]
max_len = 8

[targets.target_total]
type = "scalars"
vars = ["trueE"]
"""


@pytest.fixture(scope="module")
def data():
    return make_dataset(300, seed=3)


def _padding(batch: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    slots = np.arange(batch.shape[1])[None, :] >= lengths[:, None]
    return batch[slots]


def _first_padding(data, spec: BatchSpec) -> np.ndarray:
    x = Batches(data, spec, Order(batch_size=300, shuffle=False))[0][0]
    lens = np.minimum(np.diff(data.ragged("png")[1]), x["input_png3d"].shape[1])
    pad = _padding(x["input_png3d"], lens)
    assert pad.size  # the data has short rows
    return pad


def test_new_ragged_pads_with_zero(data):
    assert Ragged(["png.calE"]).pad_value == 0.0
    pad = _first_padding(data, BatchSpec(inputs={"input_png3d": Ragged(PNG3D_VARS[:2], max_len=8)}))
    assert (pad == 0.0).all()
    assert repr(Ragged(["a"], pad_value=math.nan)) == "Ragged(['a'], pad_value=nan)"


def test_every_written_spec_carries_version_2(tmp_path):
    spec = BatchSpec(inputs={"x": Ragged(["png.calE"])})
    text = spec.to_toml()
    assert text.startswith(f"version = {SPEC_VERSION}\n") and SPEC_VERSION == 2
    assert spec.to_dict()["version"] == 2
    path = tmp_path / "s.toml"
    path.write_text(text)
    assert BatchSpec.from_toml(path) == spec


def test_a_file_without_version_keeps_nan_padding(tmp_path, data):
    path = tmp_path / "old.toml"
    path.write_text(V1_FILE)
    with pytest.warns(SpecVersionWarning, match=r"old.toml: no 'version' key.*input_png3d pad with NaN.*version = 2"):
        spec = BatchSpec.from_toml(path)
    assert math.isnan(spec.inputs["input_png3d"].pad_value)
    assert np.isnan(_first_padding(data, spec)).all()
    # written back, the file is version 2 and says NaN explicitly: same batches
    path.write_text(spec.to_toml())
    again = BatchSpec.from_toml(path)
    assert 'pad_value = "nan"' in path.read_text() and again == spec


def test_a_version_2_file_without_pad_value_pads_with_zero(tmp_path, data):
    path = tmp_path / "new.toml"
    path.write_text("version = 2\n" + V1_FILE)
    spec = BatchSpec.from_toml(path)
    assert spec.inputs["input_png3d"].pad_value == 0.0
    assert (_first_padding(data, spec) == 0.0).all()


@pytest.mark.parametrize("version, match", [(3, "newer than this lstm_data reads"), ("2", "positive int"),
                                            (0, "positive int"), (True, "positive int")])
def test_a_bad_version_is_named(version, match):
    data = {"version": version, "inputs": {"x": {"type": "ragged", "vars": ["a"]}}}
    with pytest.raises(SchemaError, match=match):
        BatchSpec.from_dict(data, source="my.toml")


def test_from_lstm_ee_keeps_nan():
    spec = BatchSpec.from_lstm_ee({"vars_input_png3d": ["png.calE"], "var_target_total": "trueE",
                                   "max_prongs": 4})
    assert math.isnan(spec.inputs["input_png3d"].pad_value)


def test_a_store_written_before_versions_reloads_and_is_reused(tmp_path, data):
    """A store's spec record from before spec versions (no version key) keeps its NaN padding and
    is still reused by the same spec."""
    import zarr

    spec = BatchSpec(inputs={"input_png3d": Ragged(PNG3D_VARS[:2], max_len=8, pad_value=math.nan),
                             "input_slice": Scalars(SLICE_VARS[:2])},
                     targets={"target_total": Scalars(["trueE"])})
    out = tmp_path / "b.zarr"
    precompute(data, spec, out, Order(batch_size=100, seed=1), progress=False)
    # rewrite the record as an earlier release wrote it: no version key
    root = zarr.open_group(str(out), mode="r+")
    meta = dict(root.attrs["lstm_data_batches"])
    old = dict(meta["spec"])
    assert old.pop("version") == 2
    meta["spec"] = json.loads(json.dumps(old))
    root.attrs["lstm_data_batches"] = meta
    write_manifest(out)  # as that release's writer did after the metadata
    stored = open_batches(out)
    assert math.isnan(stored.spec.inputs["input_png3d"].pad_value)
    x = stored[0][0]["input_png3d"]
    assert np.isnan(x).any()
    again = precompute(data, spec, out, Order(batch_size=100, seed=1), progress=False)
    assert again.reused
    # the same spec with the new default is another spec
    from lstm_data.store.format import StoreMismatchError
    with pytest.raises(StoreMismatchError, match="differs in pad_value"):
        open_batches(out, spec=spec.replace(inputs={**spec.inputs,
                                                    "input_png3d": Ragged(PNG3D_VARS[:2], max_len=8)}))


def test_a_file_without_version_pads_by_its_version_alone_and_warns_once(tmp_path, recwarn):
    """No other key (mask, empty, selection) turns a file without version into version 2 behind
    the user's back: it pads with NaN and says so, once per load, naming every such field."""
    for extra, top in (("mask = true\n", ""), ("", 'selection = "a > 0"\n'), ("layout = \"channels_first\"\n", "")):
        path = tmp_path / "old.toml"
        path.write_text(top + '[inputs.x]\ntype = "ragged"\nvars = ["a"]\nmax_len = 4\n' + extra
                        + '[inputs.y]\ntype = "ragged"\nvars = ["b"]\n')
        with pytest.warns(SpecVersionWarning) as caught:
            spec = BatchSpec.from_toml(path)
        assert len(caught) == 1 and "inputs.x, inputs.y pad with NaN" in str(caught[0].message)
        assert math.isnan(spec.inputs["x"].pad_value) and math.isnan(spec.inputs["y"].pad_value)
    # empty = "one_step" needs a finite fill: refused, after the warning says why the fill is NaN
    path.write_text('[inputs.x]\ntype = "ragged"\nvars = ["a"]\nempty = "one_step"\n')
    with pytest.warns(SpecVersionWarning, match="version = 2"), pytest.raises(SchemaError, match="finite"):
        BatchSpec.from_toml(path)
    # nothing implied, nothing said: a version, or every ragged pad_value written out
    recwarn.clear()
    path.write_text('version = 2\n[inputs.x]\ntype = "ragged"\nvars = ["a"]\nempty = "one_step"\n')
    assert BatchSpec.from_toml(path).inputs["x"].pad_value == 0.0
    path.write_text('[inputs.x]\ntype = "ragged"\nvars = ["a"]\npad_value = nan\n[inputs.s]\ntype = "scalars"\nvars = ["c"]\n')
    assert math.isnan(BatchSpec.from_toml(path).inputs["x"].pad_value)
    assert not [w for w in recwarn if issubclass(w.category, SpecVersionWarning)]
