"""Columns taken from the file rather than its rows: the file's index, or a label or weight per
path pattern, usable as targets, weights and in every order."""
from __future__ import annotations

import numpy as np
import pytest

import lstm_data
from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars
from lstm_data.errors import OptionError
from lstm_data.synthetic import write_csv


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("per_file")
    paths = [root / "qcd_0.csv", root / "qcd_1.csv", root / "ttbar_0.csv"]
    for i, path in enumerate(paths):
        write_csv(path, 100 + 50 * i, seed=i)
    return paths


def test_index_and_pattern_columns_hold_each_files_value(files):
    ds = lstm_data.open([str(p) for p in files],
                        file_values={"file_index": "index", "label": {"*qcd*": 0, "*ttbar*": 1}})
    assert ds.scalar_names[-2:] == ["file_index", "label"]
    index = ds.scalar("file_index")
    assert index.tolist() == [0] * 100 + [1] * 150 + [2] * 200
    assert ds.scalar("label").tolist() == [0] * 250 + [1] * 200
    rows = np.array([449, 0, 260, 120])
    assert ds.scalar("label", rows).tolist() == [1, 0, 1, 0]
    spec = BatchSpec(inputs={"png": Ragged(["png.calE"], max_len=4)}, targets={"label": Scalars(["label"])})
    b = Batches(ds, spec, Order(batch_size=64, seed=1, weights="file_index"))
    for i in range(len(b)):
        rows = b.rows_of(i)
        _, targets, weights = b[i]
        assert targets["label"][:, 0].tolist() == (rows >= 250).astype(np.float32).tolist()
        assert weights["label"].tolist() == np.searchsorted([100, 250], rows, side="right").tolist()


def test_a_file_no_pattern_matches_is_named(files):
    with pytest.raises(OptionError, match=r"ttbar_0.csv matches none of the patterns \['\*qcd\*'\]"):
        lstm_data.open([str(p) for p in files], file_values={"label": {"*qcd*": 0}})
    with pytest.raises(OptionError, match="file_values"):
        lstm_data.open(str(files[0]), file_values={"label": "first"})


def test_a_per_file_column_may_not_shadow_a_data_column(files):
    with pytest.raises(lstm_data.SchemaError, match="'calE' has the name of a column"):
        lstm_data.open(str(files[0]), file_values={"calE": "index"})
