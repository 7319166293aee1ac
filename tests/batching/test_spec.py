"""BatchSpec: signature before data, validation errors, flattening, TOML and lstm_ee configs."""
from __future__ import annotations

import math

import numpy as np
import pytest

from lstm_data import BatchSpec, Ragged, Scalars, SchemaError
from lstm_data.data.synthetic import PNG2D_VARS, PNG3D_VARS, SLICE_VARS, make_dataset
from tests.helpers import EXAMPLES

EXAMPLE_TOML = EXAMPLES / "numu_v3.toml"


DS_ROWS, DS_SEED = 200, 0  # the ``ds`` fixture (tests/conftest.py)


def _spec(**ragged):
    return BatchSpec(inputs={"input_slice": Scalars(["calE", "nHit"]),
                             "input_png3d": Ragged(["png.calE", "png.len"], **ragged)},
                     targets={"target_total": Scalars(["trueE"], dtype=np.float64)})


def test_signature_knows_names_dtypes_shapes_before_data():
    sig = _spec(max_len=7, lengths=True).signature()
    assert list(sig) == ["input_slice", "input_png3d", "input_png3d_lengths", "target_total"]
    assert sig["input_slice"].shape == (None, 2) and sig["input_slice"].dtype == np.float32
    assert sig["input_png3d"].shape == (None, 7, 2) and sig["input_png3d"].sample_shape == (7, 2)
    assert sig["input_png3d_lengths"].dtype == np.int64 and sig["input_png3d_lengths"].role == "input"
    assert sig["target_total"].dtype == np.float64 and sig["target_total"].role == "target"
    assert _spec().signature()["input_png3d"].shape == (None, None, 2)
    assert _spec(max_len=5, fixed=False).signature()["input_png3d"].shape == (None, None, 2)


def test_validate_maps_columns_and_sort_variable(ds):
    fields = _spec(sort_by="png.energy").validate(ds)
    png = fields[1]
    assert png.group == "png"
    assert png.columns.tolist() == [PNG3D_VARS.index("png.calE"), PNG3D_VARS.index("png.len")]
    assert png.sort_column == PNG3D_VARS.index("png.energy")


@pytest.mark.parametrize("spec, message", [
    (BatchSpec(inputs={"x": Scalars(["calEE"])}), "unknown scalar 'calEE'; did you mean 'calE'"),
    (BatchSpec(inputs={"x": Ragged(["png.calEnergy"])}), "did you mean"),
    (BatchSpec(inputs={"x": Ragged(["png.calE", "png2d.calE"], layout="packed")}),
     "with layout='packed' .* one group .one prong count per row., got group 'png': 'png.calE'; "
     "group 'png2d': 'png2d.calE'"),
    (BatchSpec(inputs={"x": Ragged(["png.calE"], sort_by="png2d.calE")}),
     "sort_by 'png2d.calE' is in group 'png2d', not in the field's group 'png'"),
    (BatchSpec(inputs={"x": Scalars(["png.calE"])}), "use Ragged"),
    (BatchSpec(inputs={"x": Ragged(["calE"])}), "use Scalars"),
    (BatchSpec(inputs={"x": Ragged(["png.calE"], sort_by="png.nope")}), "png.nope"),
])
def test_validate_names_the_problem(ds, spec, message):
    with pytest.raises(SchemaError, match=message) as info:
        spec.validate(ds)
    assert "input 'x'" in str(info.value)


def test_a_header_only_csv_says_why_a_prong_variable_reads_as_scalar(tmp_path):
    import lstm_data
    from lstm_data.io.schema import Schema

    path = tmp_path / "empty.csv"
    path.write_text("calE,png.calE,png.len\n")  # no rows: nothing shows which cells are arrays
    spec = BatchSpec(inputs={"x": Ragged(["png.calE"])})
    with pytest.raises(SchemaError, match="no rows to show its arrays; declare its group"):
        spec.validate(lstm_data.open(path))
    declared = lstm_data.open(path, schema=Schema(groups={"png": "png.*"}))
    assert len(lstm_data.Batches(declared, spec)) == 0


def test_construction_errors():
    with pytest.raises(SchemaError, match="used twice"):
        BatchSpec(inputs={"a": Ragged(["png.calE"], lengths=True), "a_lengths": Scalars(["calE"])})
    with pytest.raises(SchemaError, match="padding"):
        Ragged(["png.calE"], padding="middle")
    with pytest.raises(SchemaError, match="max_len"):
        Ragged(["png.calE"], max_len=-1)
    with pytest.raises(SchemaError, match="listed twice"):
        Scalars(["calE", "calE"])
    with pytest.raises(SchemaError, match="float32, float64, int64 or int32"):
        Scalars(["calE"], dtype=np.int8)
    with pytest.raises(SchemaError, match="float32 or float64"):
        Ragged(["png.calE"], dtype=np.int32)
    with pytest.raises(SchemaError, match="at least one"):
        BatchSpec()


def test_flatten_roundtrip_tuple_and_dict():
    spec = _spec(lengths=True)
    inputs = {"input_slice": 1, "input_png3d": 2, "input_png3d_lengths": 3}
    targets = {"target_total": 4}
    weights = {"target_total": 5}
    assert spec.flatten((inputs, targets)) == (1, 2, 3, 4)
    flat = spec.flatten((inputs, targets, weights), as_dict=True)
    assert list(flat) == spec.flat_names(weights=True) == [
        "input_slice", "input_png3d", "input_png3d_lengths", "target_total", "target_total_weights"]
    assert spec.unflatten(flat) == (inputs, targets, weights)
    assert spec.unflatten((1, 2, 3, 4)) == (inputs, targets)
    with pytest.raises(SchemaError, match="flat items"):
        spec.unflatten((1, 2))
    with pytest.raises(SchemaError, match="no input 'input_png3d_lengths'"):
        spec.flatten(({"input_slice": 1, "input_png3d": 2}, targets))


def test_dict_roundtrip_keeps_nan_and_options():
    spec = _spec(max_len=4, pad_value=float("nan"), sort_by="png.len", descending=False,
                 padding="pre", truncating="pre", lengths=True, fixed=False)
    data = spec.to_dict()
    assert data["inputs"]["input_png3d"]["pad_value"] == "nan"
    back = BatchSpec.from_dict(data)
    assert back == spec
    assert math.isnan(back.inputs["input_png3d"].pad_value)
    assert back.inputs["input_png3d"].padding == "pre"


def test_from_toml_example_file():
    spec = BatchSpec.from_toml(EXAMPLE_TOML)
    sig = spec.signature()
    assert list(spec.inputs) == ["input_slice", "input_png2d", "input_png3d"]
    assert sig["input_png3d"].shape == (None, 10, len(PNG3D_VARS))
    assert sig["input_png2d"].shape == (None, 10, len(PNG2D_VARS))
    assert spec.targets["target_total"].vars == ("trueE",)
    assert spec.targets["target_primary"].vars == ("trueLepE",)
    spec.validate(make_dataset(50, seed=1))


def test_from_toml_errors_name_the_table(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('version = 2\n[inputs.x]\ntype = "ragged"\nvars = ["png.calE"]\nmaxlen = 3\n')
    with pytest.raises(SchemaError, match=r"\[inputs.x\]: unknown option\(s\) \['maxlen'\]"):
        BatchSpec.from_toml(bad)
    bad.write_text('[inputs.x]\ntype = "table"\nvars = ["calE"]\n')
    with pytest.raises(SchemaError, match="type must be 'scalars' or 'ragged'"):
        BatchSpec.from_toml(bad)
    bad.write_text("[inputs.x\n")
    with pytest.raises(SchemaError, match="not valid TOML"):
        BatchSpec.from_toml(bad)


def test_from_lstm_ee_config_layout():
    config = {"vars_input_slice": SLICE_VARS, "vars_input_png3d": PNG3D_VARS,
              "vars_input_png2d": PNG2D_VARS, "var_target_total": "trueE",
              "var_target_primary": "trueLepE", "max_prongs": 5, "batch_size": 64}
    spec = BatchSpec.from_lstm_ee(config)
    sig = spec.signature()
    assert list(sig) == ["input_slice", "input_png3d", "input_png2d", "target_total", "target_primary"]
    assert sig["input_png3d"].shape == (None, None, 33)  # capped at 5, but per batch as lstm_ee
    assert spec.inputs["input_png3d"].max_len == 5 and not spec.inputs["input_png3d"].fixed
    assert math.isnan(spec.inputs["input_png2d"].pad_value)
    assert sig["target_primary"].shape == (None, 1)
    only = BatchSpec.from_lstm_ee({"vars_input_png3d": PNG3D_VARS, "var_target_total": "trueE"})
    assert list(only.signature()) == ["input_png3d", "target_total"]
