"""A spec's variables are pushed down to the readers that select columns (``ReadOptions.needed``)."""
from __future__ import annotations

import numpy as np
import pytest

import lstm_data
from lstm_data import BatchSpec, Order, Ragged, Scalars
from lstm_data.synthetic import write_csv

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


@pytest.fixture(scope="module")
def parquet_path(tmp_path_factory):
    rng = np.random.default_rng(1)
    n = 300
    lens = rng.integers(0, 4, n)
    table = pa.table({
        "calE": rng.random(n).astype(np.float32),
        "trueE": rng.random(n).astype(np.float32),
        "unused": rng.random(n),
        "png.calE": [rng.random(k).astype(np.float32).tolist() for k in lens],
        "png.nhit": [rng.random(k).astype(np.float32).tolist() for k in lens],
        "trk.x": [rng.random(k).tolist() for k in lens],
    })
    path = tmp_path_factory.mktemp("needed") / "events.parquet"
    pq.write_table(table, path)
    return path


SPEC = BatchSpec(inputs={"png": Ragged(["png.calE"], max_len=3, sort_by="png.nhit"),
                         "s": Scalars(["calE"])},
                 targets={"t": Scalars(["trueE"])})


def test_the_spec_names_every_variable_it_reads():
    assert SPEC.variables == ["png.calE", "png.nhit", "calE", "trueE"]


def test_needed_columns_are_all_a_parquet_reader_reads(parquet_path):
    ds = lstm_data.open(parquet_path, needed=tuple(SPEC.variables))
    assert ds.scalar_names == ["calE", "trueE"] and ds.groups == {"png": ["png.calE", "png.nhit"]}
    full = lstm_data.open(parquet_path)
    a = lstm_data.Batches(ds, SPEC, Order(batch_size=64, seed=0))
    b = lstm_data.Batches(full, SPEC, Order(batch_size=64, seed=0))
    for x, y in zip(a[1], b[1]):
        for k in x:
            assert x[k].tobytes() == y[k].tobytes()


def test_needed_is_a_hint_where_a_format_reads_every_column(tmp_path):
    path = tmp_path / "e.csv"
    write_csv(path, 40, seed=2)
    assert len(lstm_data.open(path, needed=("calE",)).scalar_names) > 1  # CSV reads them all, no error


def test_precompute_reads_only_what_the_spec_needs(parquet_path, tmp_path, caplog):
    from lstm_data.cli import main

    spec_path = tmp_path / "spec.toml"
    spec_path.write_text(SPEC.to_toml())
    out = tmp_path / "b.zarr"
    assert main(["-v", "precompute", "--data", str(parquet_path), "--spec", str(spec_path), "--out", str(out),
                 "--no-progress"]) == 0
    stored = lstm_data.open_batches(out)
    assert len(stored) == 1
