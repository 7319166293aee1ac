"""Parquet files with columns that are not numbers, fixed-size lists and lists of lists; choosing
columns by name or glob; reading only the chosen columns."""
from __future__ import annotations

import json
import logging

import numpy as np
import pytest

import lstm_data
from lstm_data import FormatError, SchemaError
from lstm_data.cli import main
from lstm_data.io.parquet import ParquetDataset, from_arrow, read_parquet
from lstm_data.io.read_options import ReadOptions

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

N = 40


def mixed_table(n=N, seed=0):
    """Numbers next to strings, list<string>, structs, timestamps, fixed-size lists, lists of lists."""
    rng = np.random.default_rng(seed)
    lens = rng.integers(0, 4, n)
    return pa.table({
        "calE": pa.array(rng.gamma(2, 1, n).astype(np.float32)),
        "run_name": pa.array([f"r{i}" for i in range(n)]),
        "tags": pa.array([["a"] * int(k) for k in lens], pa.list_(pa.string())),
        "meta": pa.array([{"a": 1, "b": "x"}] * n),
        "when": pa.array(np.arange(n).astype("datetime64[s]")),
        "vtx": pa.array([list(rng.normal(size=3)) for _ in range(n)], pa.list_(pa.float64(), 3)),
        "png.calE": pa.array([list(rng.random(int(k)).astype(np.float32)) for k in lens],
                             pa.list_(pa.float32())),
        "png.dir": pa.array([[list(rng.normal(size=3)) for _ in range(int(k))] for k in lens],
                            pa.list_(pa.list_(pa.float32(), 3))),
        "png.good": pa.array([[bool(j % 2) for j in range(int(k))] for k in lens], pa.list_(pa.bool_())),
        "hits": pa.array([[[1.0, 2.0]] * int(k) for k in lens], pa.list_(pa.list_(pa.float32()))),
        "trk": pa.array([[{"pt": float(j), "q": -1, "name": "mu"} for j in range(int(k) + 1)] for k in lens],
                        pa.list_(pa.struct([("pt", pa.float32()), ("q", pa.int8()), ("name", pa.string())]))),
        "info": pa.array([None if i == 5 else {"n": i, "hits": [0.5] * i} for i in range(n)],
                         pa.struct([("n", pa.int32()), ("hits", pa.list_(pa.float64()))])),
    })


@pytest.fixture()
def mixed_file(tmp_path):
    path = tmp_path / "mixed.parquet"
    pq.write_table(mixed_table(), path, row_group_size=16)
    return path


@pytest.mark.parametrize("in_ram", [True, False])
def test_numbers_open_and_the_rest_is_listed_once(mixed_file, caplog, in_ram):
    with caplog.at_level(logging.INFO, logger="lstm_data"):
        ds = lstm_data.open(mixed_file, in_ram=in_ram)
    t = pq.read_table(mixed_file)
    assert ds.scalar_names == ["calE", "meta.a", "vtx[0]", "vtx[1]", "vtx[2]", "info.n"]
    assert ds.groups == {"png": ["png.calE", "png.dir[0]", "png.dir[1]", "png.dir[2]", "png.good"],
                         "trk": ["trk.pt", "trk.q"], "info": ["info.hits"]}
    n = ds.scalar("info.n")
    assert np.isnan(n[5]) and n[6] == 6  # a null struct: NaN, and no values in its lists
    np.testing.assert_array_equal(np.diff(ds.offsets("info")), [0 if i == 5 else i for i in range(N)])
    assert set(ds.skipped) == {"run_name", "tags", "meta.b", "when", "hits", "trk.name"}
    np.testing.assert_array_equal(ds.scalar("meta.a"), np.ones(N))
    trk, trk_off = ds.ragged("trk")
    flat = [x for row in t.column("trk").to_pylist() for x in row]
    np.testing.assert_array_equal(trk[:, 0], [x["pt"] for x in flat])
    np.testing.assert_array_equal(trk[:, 1], [x["q"] for x in flat])
    np.testing.assert_array_equal(np.diff(trk_off), [len(r) for r in t.column("trk").to_pylist()])
    assert "lists of lists" in ds.skipped["hits"] and "list<element: string>" in ds.skipped["tags"]
    np.testing.assert_array_equal(ds.scalar("vtx[1]"), [v[1] for v in t.column("vtx").to_pylist()])
    values, offsets = ds.ragged("png")
    flat_dir = [d for row in t.column("png.dir").to_pylist() for d in row]
    np.testing.assert_array_equal(values[:, 2], np.array([d[1] for d in flat_dir], np.float32))
    flat_good = [g for row in t.column("png.good").to_pylist() for g in row]
    np.testing.assert_array_equal(values[:, 4], np.array(flat_good, np.float32))
    np.testing.assert_array_equal(np.diff(offsets), [len(r) for r in t.column("png.calE").to_pylist()])
    logged = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    assert len(logged) == 1 and "run_name" in logged[0]


def test_columns_and_exclude_choose_by_name_and_glob(mixed_file):
    ds = lstm_data.open(mixed_file, columns=["calE", "png.*"], exclude=["png.dir*"])
    assert ds.scalar_names == ["calE"]
    assert ds.groups == {"png": ["png.calE", "png.good"]}
    assert ds.skipped == {}
    ds = lstm_data.open(mixed_file, read=ReadOptions(columns=("vtx",)))  # a fixed-size list by its name
    assert ds.scalar_names == ["vtx[0]", "vtx[1]", "vtx[2]"] and ds.groups == {}
    ds = lstm_data.open(mixed_file, exclude=["run_name", "tags", "meta", "when", "hits", "trk.name"])
    assert ds.skipped == {} and "trk" in ds.groups
    with pytest.raises(SchemaError, match="columns='cale' matches no column; did you mean 'calE'"):
        lstm_data.open(mixed_file, columns=["cale"])
    with pytest.raises(SchemaError, match="'run_name' cannot be read: it holds string"):
        lstm_data.open(mixed_file, columns=["calE", "run_name"])


def test_only_the_chosen_columns_are_read(mixed_file, tmp_path):
    """A damaged column chunk of a column not chosen is never read: the file opens."""
    path = tmp_path / "damaged.parquet"
    table = mixed_table(400, seed=2).select(["calE", "png.calE", "vtx"])
    pq.write_table(table, path, row_group_size=400, compression="none", write_page_checksum=True,
                   use_dictionary=False)
    md = pq.ParquetFile(path).metadata.row_group(0).column(1)  # png.calE's values
    assert md.path_in_schema.startswith("png.calE") and not md.has_dictionary_page
    raw = bytearray(path.read_bytes())
    middle = md.data_page_offset + md.total_compressed_size // 2
    raw[middle:middle + 8] = b"\xff" * 8
    path.write_bytes(bytes(raw))
    for in_ram in (True, False):
        with pytest.raises(FormatError, match="damaged"):
            ds = lstm_data.open(path, in_ram=in_ram)
            ds.ragged("png")
        ds = lstm_data.open(path, in_ram=in_ram, columns=["calE", "vtx"])
        np.testing.assert_array_equal(ds.scalar("calE"), table.column("calE").to_numpy())


def test_nothing_numeric_lists_what_was_skipped(tmp_path):
    path = tmp_path / "s.parquet"
    pq.write_table(pa.table({"a": ["x", "y"], "b": pa.array([[["q"]], []], pa.list_(pa.list_(pa.string())))}),
                   path)
    with pytest.raises(FormatError, match=r"no numeric column to read; skipped 'a' \(string") as err:
        lstm_data.open(path)
    assert err.value.file == str(path)


def test_from_arrow_lists_skipped_columns_too():
    ds = from_arrow(mixed_table(), columns=["calE", "run_name*"])
    assert ds.scalar_names == ["calE"] and list(ds.skipped) == ["run_name"]


def test_inspect_lists_skipped_parquet_columns(mixed_file, capsys):
    assert main(["inspect", str(mixed_file), "--no-stats", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc["skipped"]) == {"run_name", "tags", "meta.b", "when", "hits", "trk.name"}


def test_a_disk_dataset_reopens_with_its_column_choice(mixed_file):
    import pickle
    ds = read_parquet(mixed_file, in_ram=False, columns=["png.calE"])
    assert isinstance(ds, ParquetDataset)
    again = pickle.loads(pickle.dumps(ds))
    assert again.groups == ds.groups == {"png": ["png.calE"]} and again.scalar_names == []


def test_reading_parquet_never_imports_pandas(tmp_path):
    """pyarrow's ``to_numpy`` imports pandas (a quarter of a second); no read path needs it."""
    import subprocess
    import sys
    import textwrap

    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "jets.parquet"
    values = pa.array(np.arange(10, dtype=np.float32))
    parts = pa.LargeListArray.from_arrays(pa.array([0, 2, 2, 5, 10], pa.int64()), values)
    table = pa.table({"pt": pa.array([1.5, None, 3.0, 4.0], pa.float32()),
                      "flag": pa.array([True, False, None, True]),
                      "n": pa.array([1, 2, 3, 4], pa.int32()),
                      "part_px": pa.array([[1.0], None, [2.0, 3.0], []], pa.list_(pa.float64())),
                      "part_e": parts})
    pq.write_table(table, path, row_group_size=3)
    script = textwrap.dedent(f"""
        import sys
        import numpy as np
        import lstm_data
        ds = lstm_data.open({str(path)!r})
        print(ds.scalar("pt").tolist(), ds.scalar("flag").tolist(), ds.scalar("n").tolist())
        for group in ds.groups:
            values, offsets = ds.ragged(group, np.arange(len(ds)))
            print(group, np.diff(offsets).tolist(), values.ravel().tolist())
        assert "pandas" not in sys.modules, "pandas imported"
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first == "[1.5, nan, 3.0, 4.0] [1.0, 0.0, nan, 1.0] [1, 2, 3, 4]", first
    groups = sorted(done.stdout.splitlines()[1:])
    assert groups == ["part [1, 0, 2, 0] [1.0, 2.0, 3.0]",
                      "part_e [2, 0, 3, 5] [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]"], groups
