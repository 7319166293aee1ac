"""A spec drafted from the data (``lstm_data.draft_spec``, ``lstm-data inspect --draft-spec``) loads and builds."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lstm_data
from lstm_data.batching.spec.draft import max_len_keeping
from lstm_data.cli import main
from lstm_data.data import synthetic
from lstm_data.errors import SchemaError


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("draft")
    synthetic.write_csv(d / "ev.csv", n_rows=800, seed=3)
    ds = lstm_data.open(d / "ev.csv")
    ds.to_parquet(d / "ev.parquet")
    ds.to_hdf5(d / "ev.h5")
    return {"csv": d / "ev.csv", "parquet": d / "ev.parquet", "hdf5": d / "ev.h5"}


@pytest.mark.parametrize("fmt", ["csv", "parquet", "hdf5"])
def test_drafted_spec_loads_and_builds_batches(files, fmt, tmp_path):
    ds = lstm_data.open(files[fmt])
    out = tmp_path / "draft.toml"
    out.write_text(lstm_data.draft_spec(ds, source=str(files[fmt])))
    spec = lstm_data.BatchSpec.from_toml(out)       # version 2: no warning (warnings are errors)
    inputs, targets, _ = lstm_data.Batches(ds, spec, lstm_data.Order(batch_size=len(ds), seed=0))[0]
    for group in ds.groups:
        lengths = np.diff(ds.offsets(group))
        field = spec.inputs[f"input_{group}"]
        assert field.max_len == max_len_keeping(lengths, 0.99) and (lengths <= field.max_len).mean() >= 0.99
        assert inputs[f"input_{group}_mask"].shape == inputs[f"input_{group}"].shape[:2]
        if (lengths == 0).any():                    # rows without elements: one step, never length 0
            assert field.empty == "one_step" and inputs[f"input_{group}_lengths"].min() == 1
            assert f"{int((lengths == 0).sum())} of {len(ds)} rows" in out.read_text()
    assert set(targets) == {"target_trueE", "target_trueLepE"}    # guessed from their names
    assert "trueE" not in spec.inputs["input_scalars"].vars
    # fitted standardisation: each scalar input is centred on its median
    np.testing.assert_allclose(np.median(inputs["input_scalars"], axis=0), 0.0, atol=0.35)
    assert np.isfinite(inputs["input_scalars"]).all()


def test_draft_without_empty_rows_or_target_names_says_what_it_placed(tmp_path):
    table = pa.table({"a": pa.array(np.arange(200, dtype=np.float32)), "b": pa.array(np.ones(200, np.float32)),
                      "hit.x": pa.array([[1.0, 2.0]] * 199 + [[1.0, 2.0, 3.0, 4.0]], pa.list_(pa.float32()))})
    ds = lstm_data.from_arrow(table)
    text = lstm_data.draft_spec(ds)
    (tmp_path / "d.toml").write_text(text)
    spec = lstm_data.BatchSpec.from_toml(tmp_path / "d.toml")
    assert spec.inputs["input_hit"].empty == "keep" and spec.inputs["input_hit"].max_len == 2
    assert "every row has an element" in text and "1 of 200 rows truncated" in text
    assert list(spec.targets) == ["target_b"] and "PLACEHOLDER: 'b'" in text
    with pytest.raises(SchemaError, match="'nope' is not a scalar column"):
        lstm_data.draft_spec(ds, targets=["nope"])


def test_inspect_draft_spec_writes_the_file_once(files, tmp_path, capsys):
    out = tmp_path / "spec.toml"
    assert main(["inspect", str(files["csv"]), "--no-stats", "--draft-spec", str(out), "--target", "trueE"]) == 0
    spec = lstm_data.BatchSpec.from_toml(out)
    assert list(spec.targets) == ["target_trueE"] and "trueLepE" in spec.inputs["input_scalars"].vars
    before = out.read_text()
    assert main(["inspect", str(files["csv"]), "--draft-spec", str(out)]) == 1
    assert "exists and is kept" in capsys.readouterr().err and out.read_text() == before
    assert main(["inspect", str(files["csv"]), "--target", "trueE"]) == 1
    assert "give --draft-spec" in capsys.readouterr().err


def test_a_class_label_target_is_int64_and_left_unstandardised(tmp_path):
    rng = np.random.default_rng(0)
    n = 300
    counts = rng.integers(0, 4, n)
    table = pa.table({"pt": rng.random(n), "label": rng.integers(0, 3, n).astype(np.float64),
                      "trk_d0": pa.array([list(rng.random(k)) for k in counts])})
    import pyarrow.parquet as pq
    pq.write_table(table, tmp_path / "jets.parquet")
    ds = lstm_data.open(tmp_path / "jets.parquet")
    text = lstm_data.draft_spec(ds, targets=["label"])
    assert "class label: 3 classes (0, 1, 2)" in text
    (tmp_path / "s.toml").write_text(text)
    spec = lstm_data.BatchSpec.from_toml(tmp_path / "s.toml")
    field = spec.targets["target_label"]
    assert field.dtype == "int64" and not field.standardize
    _, targets, _ = lstm_data.Batches(ds, spec, lstm_data.Order(batch_size=n, seed=0))[0]
    assert targets["target_label"].dtype == np.int64
    assert np.array_equal(np.sort(targets["target_label"].ravel()), np.sort(table["label"].to_numpy()))
    with pytest.raises(SchemaError, match="did you mean 'label'"):
        lstm_data.draft_spec(ds, targets=["lable"])
