"""``lstm-data convert``, ``inspect`` and ``precompute`` on Parquet files written by pyarrow."""
from __future__ import annotations

import json

import numpy as np
import pytest

import lstm_data
from lstm_data import Batches, BatchSpec, Order, open_batches
from lstm_data.cli import main
from lstm_data.data.synthetic import make_dataset
from tests.helpers import EXAMPLES, assert_same_batch, assert_same_dataset

pq = pytest.importorskip("pyarrow.parquet")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A NOvA-like dataset and the same rows as a plain pyarrow file and as a directory of two."""
    d = tmp_path_factory.mktemp("pq")
    ds = make_dataset(1200, seed=9)
    table = ds.to_arrow().replace_schema_metadata(None)  # as other tools write it: no recorded groups
    pq.write_table(table, d / "ev.parquet", row_group_size=400)
    (d / "parts").mkdir()
    pq.write_table(table.slice(0, 500), d / "parts" / "a.parquet")
    pq.write_table(table.slice(500), d / "parts" / "b.parquet")
    return ds, d


def test_convert_a_file_and_a_directory(data, tmp_path, capsys):
    ds, d = data
    assert main(["convert", str(d / "ev.parquet"), str(tmp_path / "ev.zarr"), "--quiet"]) == 0
    assert main(["convert", str(d / "parts"), str(tmp_path / "ev.h5"), "--quiet"]) == 0
    assert_same_dataset(lstm_data.open(tmp_path / "ev.zarr"), ds)
    assert_same_dataset(lstm_data.open(tmp_path / "ev.h5"), ds)
    assert main(["convert", str(d / "ev.parquet"), str(tmp_path / "s.zarr"), "--shuffle-seed", "5"]) == 0
    assert "1200 rows" in capsys.readouterr().out
    perm = np.random.default_rng(5).permutation(len(ds))
    assert_same_dataset(lstm_data.open(tmp_path / "s.zarr"), ds.take(perm))


def test_inspect(data, capsys):
    ds, d = data
    assert main(["inspect", str(d / "ev.parquet")]) == 0
    out = capsys.readouterr().out
    assert "rows: 1200" in out and "group png (33 variables" in out and "png2d.calE" in out
    assert main(["inspect", str(d / "parts"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    calE = next(s for s in doc["scalars"] if s["name"] == "calE")
    assert calE["min"] == float(ds.scalar("calE").min()) and calE["max"] == float(ds.scalar("calE").max())
    assert doc["groups"]["png"]["variables"][0]["count"] == int(ds.offsets("png")[-1])


def test_precompute(data, tmp_path, capsys):
    ds, d = data
    spec = BatchSpec.from_toml(EXAMPLES / "numu_v3.toml")
    out = tmp_path / "b.zarr"
    assert main(["precompute", "--data", str(d / "ev.parquet"), "--spec", str(EXAMPLES / "numu_v3.toml"),
                 "--batch-size", "256", "--seed", "3", "--out", str(out), "--no-progress"]) == 0
    assert "5 batches, 1200 rows" in capsys.readouterr().out
    stored = open_batches(out, order=Order(batch_size=256, seed=3), spec=spec,
                          dataset=ds)  # same data, by fingerprint
    live = Batches(ds, spec, Order(batch_size=256, seed=3))
    for i in range(len(live)):
        assert_same_batch(live[i], stored[i])
