"""Parquet and Arrow: files written by pyarrow, read against pyarrow's own answers, bitwise."""
from __future__ import annotations

import pickle
import sys

import numpy as np
import pytest

import lstm_data
from lstm_data import FormatError, Order, SchemaError
from lstm_data.data.synthetic import make_dataset
from lstm_data.io.parquet import (
    ParquetDataset,
    from_arrow,
    read_parquet,
    to_arrow,
    write_parquet,
)
from lstm_data.io.columns.exact_ints import PrecisionWarning
from lstm_data.io.parquet.columns import import_pyarrow, list_column
from tests.helpers import assert_bitwise, assert_same_dataset

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pc = pytest.importorskip("pyarrow.compute")


def assert_matches_arrow(ds, table):
    """Every column of ``ds`` equals, bitwise, what pyarrow itself gives for ``table``."""
    for s in ds.scalar_names:
        got = ds.scalar(s)
        want = np.array([np.nan if x is None else x for x in table.column(s).to_pylist()], dtype=got.dtype)
        assert_bitwise(np.asarray(got), want, s)
    for g, names in ds.groups.items():
        values, offsets = ds.ragged(g)
        for j, v in enumerate(names):
            col = table.column(v)
            lengths = pc.fill_null(pc.list_value_length(col), 0).to_numpy().astype(np.int64)
            assert_bitwise(np.diff(offsets), lengths, f"{v} lengths")
            flat = pc.list_flatten(col)
            want = np.array([np.nan if x is None else x for x in flat.to_pylist()], dtype=values.dtype)
            assert_bitwise(np.ascontiguousarray(values[:, j]), want, v)


def _table(n=300, seed=0, list_type=None):
    """Scalars of three kinds and two groups of list columns, pyarrow-built from Python lists."""
    rng = np.random.default_rng(seed)
    lens = rng.poisson(2.5, n)
    lens2 = rng.integers(0, 4, n)

    def cells(lengths, dtype):
        return [list(np.round(rng.normal(size=k), 3).astype(dtype)) for k in lengths]

    f32 = list_type(pa.float32()) if list_type else pa.list_(pa.float32())
    f64 = list_type(pa.float64()) if list_type else pa.list_(pa.float64())
    return pa.table({
        "calE": pa.array(np.round(rng.exponential(size=n), 4).astype(np.float32)),
        "nHit": pa.array(rng.integers(0, 500, n).astype(np.int32)),
        "trueE": pa.array(rng.exponential(size=n)),
        "png.calE": pa.array(cells(lens, np.float32), f32),
        "png.nhit": pa.array([[float(x) for x in rng.integers(0, 90, k)] for k in lens], f32),
        "png.dir.x": pa.array(cells(lens, np.float32), f32),
        "png2d.calE": pa.array(cells(lens2, np.float64), f64),
        "png2d.view": pa.array(cells(lens2, np.float64), f64),
    })


@pytest.fixture(scope="module")
def table():
    return _table()


def test_single_chunk_file_equals_pyarrow(table, tmp_path):
    pq.write_table(table, tmp_path / "t.parquet")
    ds = lstm_data.open(tmp_path / "t.parquet")
    assert ds.in_ram and ds.groups == {"png": ["png.calE", "png.nhit", "png.dir.x"],
                                       "png2d": ["png2d.calE", "png2d.view"]}
    assert ds.scalar_names == ["calE", "nHit", "trueE"] and ds.scalar("nHit").dtype == np.int32
    assert ds.ragged("png")[0].dtype == np.float32 and ds.ragged("png2d")[0].dtype == np.float64
    assert_matches_arrow(ds, pq.read_table(tmp_path / "t.parquet"))


@pytest.mark.parametrize("in_ram", [True, False])
def test_many_row_groups_and_one_dataset_of_a_directory(table, tmp_path, in_ram):
    d = tmp_path / "parts"
    d.mkdir()
    for k, (a, b) in enumerate([(0, 120), (120, 121), (121, 300)]):
        pq.write_table(table.slice(a, b - a), d / f"part-{k}.parquet", row_group_size=37)
    (d / "_SUCCESS").write_text("")
    ds = read_parquet(d, in_ram=in_ram)
    assert ds.in_ram is in_ram and len(ds) == 300
    assert ds.source == tuple(str(d / f"part-{k}.parquet") for k in range(3))
    assert_matches_arrow(ds, table)
    assert_same_dataset(lstm_data.open(d), from_arrow(table))


def test_chunked_columns_breaking_at_different_rows(table):
    def rechunk(col, cuts):
        return pa.chunked_array([col.slice(a, b - a) for a, b in zip(cuts[:-1], cuts[1:])])

    cols = {name: rechunk(table.column(name).combine_chunks(), cuts) for name, cuts in [
        ("calE", [0, 10, 300]), ("nHit", [0, 300]), ("trueE", [0, 150, 151, 300]),
        ("png.calE", [0, 100, 200, 300]), ("png.nhit", [0, 7, 300]), ("png.dir.x", [0, 299, 300]),
        ("png2d.calE", [0, 1, 2, 300]), ("png2d.view", [0, 300])]}
    chunked = pa.table(cols)
    assert chunked.column("png.calE").num_chunks == 3
    ds = from_arrow(chunked)
    assert_matches_arrow(ds, table)


def test_sliced_table_and_sliced_children(table):
    sliced = table.slice(41, 200)
    ds = from_arrow(sliced)
    assert len(ds) == 200
    assert_matches_arrow(ds, sliced)
    child = pa.array(np.arange(20, dtype=np.float32)).slice(3)  # a child with its own offset
    col = pa.ListArray.from_arrays(pa.array([0, 2, 2, 7], pa.int32()), child).slice(1)
    ds = from_arrow(pa.table({"p.x": col}))
    np.testing.assert_array_equal(ds.ragged("p")[1], [0, 0, 5])
    np.testing.assert_array_equal(ds.ragged("p")[0][:, 0], np.arange(5, 10, dtype=np.float32))


def test_single_chunk_buffers_are_used_as_they_are(table):
    sliced = table.slice(5, 100)
    col = list_column(sliced.column("png.calE"), "png.calE", np.dtype(np.float32))
    arr = sliced.column("png.calE").chunk(0)
    values_buffer = arr.values.buffers()[1]
    offsets = arr.offsets.to_numpy()
    assert len(col.pieces) == 1
    assert col.pieces[0].ctypes.data == values_buffer.address + 4 * int(offsets[0])
    assert col.offsets[0].ctypes.data == arr.buffers()[1].address + 4 * arr.offset
    scalar = from_arrow(sliced).scalar("trueE")
    assert scalar.ctypes.data == sliced.column("trueE").chunk(0).buffers()[1].address + 8 * 5
    assert not scalar.flags.writeable


def test_nulls_are_missing_values(tmp_path):
    spanning = pa.ListArray.from_arrays(pa.array([0, 2, 5, 6], pa.int32()),
                                        pa.array([1.0, 2.0, 9.0, 9.0, 9.0, 3.0], pa.float32()),
                                        mask=pa.array([False, True, False]))
    t = pa.table({
        "f": pa.array([1.5, None, 3.0], pa.float32()),
        "i": pa.array([None, 2, 3], pa.int64()),
        "b": pa.array([True, None, False]),
        "ok": pa.array([True, False, True]),
        "a.x": pa.array([[1.0, None], None, [3.0]], pa.list_(pa.float32())),
        "a.y": spanning,
    })
    ds = from_arrow(t)
    assert_bitwise(ds.scalar("f"), np.array([1.5, np.nan, 3.0], np.float32))
    assert_bitwise(ds.scalar("i"), np.array([np.nan, 2.0, 3.0]))
    assert_bitwise(ds.scalar("b"), np.array([1.0, np.nan, 0.0]))
    assert ds.scalar("ok").dtype == np.bool_
    values, offsets = ds.ragged("a")
    np.testing.assert_array_equal(offsets, [0, 2, 2, 3])
    assert_bitwise(values, np.array([[1.0, 1.0], [np.nan, 2.0], [3.0, 3.0]], np.float32))
    assert_matches_arrow(ds, t)
    pq.write_table(t, tmp_path / "n.parquet")  # nulls through a file as well
    for in_ram in (True, False):
        assert_same_dataset(read_parquet(tmp_path / "n.parquet", in_ram=in_ram), ds)


@pytest.mark.parametrize("list_type", [pa.large_list, pa.list_])
def test_large_list_and_list_give_the_same(list_type, tmp_path):
    t = _table(200, seed=3, list_type=list_type)
    pq.write_table(t, tmp_path / "l.parquet", row_group_size=64)
    ds = read_parquet(tmp_path / "l.parquet")
    assert_matches_arrow(ds, t)
    assert_same_dataset(ds, from_arrow(_table(200, seed=3)))
    assert_same_dataset(read_parquet(tmp_path / "l.parquet", in_ram=False), ds)


def test_mixed_widths_and_dtype_option():
    t = pa.table({"s": pa.array([1, 2], pa.int16()),
                  "g.a": pa.array([[0.1], [0.2, 0.3]], pa.list_(pa.float32())),
                  "g.b": pa.array([[0.1], [0.2, 0.3]], pa.list_(pa.float64())),
                  "h.n": pa.array([[7], [8, 2 ** 24 + 1]], pa.list_(pa.int32())),
                  "k.n": pa.array([[7], [8, 9]], pa.list_(pa.int16()))})
    ds = from_arrow(t)
    values = ds.ragged("g")[0]
    assert values.dtype == np.float64
    assert_bitwise(values[:, 0], np.array([0.1, 0.2, 0.3], np.float32).astype(np.float64))
    assert ds.ragged("h")[0].dtype == np.float64 and ds.ragged("k")[0].dtype == np.float32
    as64 = from_arrow(t, dtype=np.float64)
    assert as64.scalar("s").dtype == np.float64 and as64.ragged("k")[0].dtype == np.float64
    with pytest.warns(PrecisionWarning, match=r"column 'h.n' holds integers that float32 does not hold "
                      r"exactly \(first at row 1: 16777217 reads as 16777216\)"):
        as32 = from_arrow(t, dtype=np.float32)
    assert as32.ragged("h")[0][2, 0] == np.float32(2 ** 24)


def test_schema_declares_groups_and_selects_columns(table):
    t = table.append_column("run_name", pa.array(["r1"] * len(table)))
    assert from_arrow(t).skipped == {"run_name": "string: not numbers"}
    with pytest.raises(SchemaError, match="'run_name' cannot be read: it holds string") as info:
        from_arrow(t, schema={"scalars": ["calE", "run_name"]})
    assert info.value.variable == "run_name"
    ds = from_arrow(t, schema={"groups": {"tracks": ["png.calE", "png.dir.x"]}, "scalars": ["calE"],
                               "dtype": "float64"})
    assert ds.scalar_names == ["calE"]
    assert ds.groups == {"tracks": ["png.calE", "png.dir.x"], "png": ["png.nhit"],  # the rest by prefix
                         "png2d": ["png2d.calE", "png2d.view"]}
    assert ds.ragged("tracks")[0].dtype == np.float64
    with pytest.raises(FormatError, match="no numeric column.*'p.s' .list<item: string>: lists of string"):
        from_arrow(pa.table({"p.s": pa.array([["a"], []])}))


def test_unequal_lengths_stay_apart_and_a_declared_group_names_the_row(table, tmp_path):
    """List columns of one prefix group by their lengths: one that differs (row 123) is a group
    of its own, in a table, a file in RAM and on disk alike; declared together, it is an error."""
    bad = table.set_column(5, "png.dir.x", pa.array(
        [row if i != 123 else row + [1.0] for i, row in enumerate(table.column("png.dir.x").to_pylist())],
        pa.list_(pa.float32())))
    pq.write_table(bad, tmp_path / "bad.parquet", row_group_size=50)
    want = {"png": ["png.calE", "png.nhit"], "png.dir.x": ["png.dir.x"], "png2d": ["png2d.calE", "png2d.view"]}
    for ds in (from_arrow(bad), read_parquet(tmp_path / "bad.parquet", in_ram=True),
               read_parquet(tmp_path / "bad.parquet", in_ram=False)):
        assert ds.groups == want
        assert_matches_arrow(ds.load(), bad)
    declared = {"groups": {"png": "png.*"}}
    with pytest.raises(SchemaError, match=r"'png.dir.x' has \d+ values but 'png.calE' has \d+ in row 123"):
        from_arrow(bad, schema=declared)
    for in_ram in (True, False):
        ds = None
        with pytest.raises(SchemaError, match="in row 123") as info:
            ds = read_parquet(tmp_path / "bad.parquet", in_ram=in_ram, schema=declared)
            ds.ragged("png")  # on disk: found when its row group is read
        assert (info.value.file, info.value.row, info.value.variable) == (
            str(tmp_path / "bad.parquet"), 123, "png.dir.x")


def test_damaged_files_name_the_file(table, tmp_path):
    good = tmp_path / "good.parquet"
    write_parquet(from_arrow(table), good, compression="none", row_group_size=100)
    data = bytearray(good.read_bytes())
    (tmp_path / "cut.parquet").write_bytes(bytes(data[:len(data) // 2]))
    with pytest.raises(FormatError, match="damaged or incomplete") as info:
        lstm_data.open(tmp_path / "cut.parquet")
    assert info.value.file == str(tmp_path / "cut.parquet")
    pos = bytes(data).find(np.float32(table.column("png.calE")[3][0].as_py()).tobytes())
    data[pos] ^= 0x40  # a value inside a data page: caught by the page checksum
    (tmp_path / "flip.parquet").write_bytes(bytes(data))
    with pytest.raises(FormatError, match="from row 0 on.*damaged.*(CRC|checksum)") as info:
        lstm_data.open(tmp_path / "flip.parquet")
    assert info.value.file == str(tmp_path / "flip.parquet")
    with pytest.raises(FormatError, match="row group 0.*damaged") as info:
        read_parquet(tmp_path / "flip.parquet", in_ram=False).ragged("png")
    assert info.value.file == str(tmp_path / "flip.parquet")
    other = tmp_path / "dir"
    other.mkdir()
    pq.write_table(table, other / "a.parquet")
    pq.write_table(table.drop_columns(["nHit"]), other / "b.parquet")
    with pytest.raises(FormatError, match="columns differ") as info:
        lstm_data.open(other)
    assert info.value.file == str(other / "b.parquet")


@pytest.mark.parametrize("in_ram", [True, False])
def test_round_trip_is_bitwise(tmp_path, in_ram):
    ds = make_dataset(1200, seed=4)
    ds.to_parquet(tmp_path / "r.parquet", row_group_size=500)
    back = read_parquet(tmp_path / "r.parquet", in_ram=in_ram)
    assert_same_dataset(back, ds)
    assert_same_dataset(from_arrow(ds.to_arrow()), ds)
    assert_same_dataset(from_arrow(to_arrow(back, large_list=True)), ds)
    assert pq.ParquetFile(tmp_path / "r.parquet").metadata.num_row_groups == 3


def test_round_trip_keeps_groups_that_do_not_follow_the_prefix(tmp_path):
    from lstm_data.data.dataset import InMemoryDataset
    from lstm_data.data.ragged import RaggedGroup
    ds = InMemoryDataset({"x": np.arange(3.0)}, {"agents": RaggedGroup(
        ["centroid_x", "centroid_y"], np.arange(8, dtype=np.float32).reshape(4, 2), np.array([0, 1, 1, 4]))})
    write_parquet(ds, tmp_path / "a.parquet")
    assert_same_dataset(read_parquet(tmp_path / "a.parquet"), ds)
    assert_same_dataset(from_arrow(to_arrow(ds)), ds)


def test_writer_is_atomic_and_never_replaces_its_input(tmp_path):
    ds = make_dataset(300, seed=5)
    out = tmp_path / "w.parquet"
    write_parquet(ds, out)
    with pytest.raises(FileExistsError):
        write_parquet(ds, out)
    disk = read_parquet(out, in_ram=False)
    with pytest.raises(ValueError, match="would overwrite the input data"):
        disk.to_parquet(out, overwrite=True)

    def boom(done, total):
        raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        write_parquet(make_dataset(100, seed=6), out, overwrite=True, progress=boom)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.parquet"]
    assert_same_dataset(read_parquet(out), ds)


def test_random_batch_reads_each_touched_row_group_once(tmp_path):
    ds = make_dataset(4000, seed=6)
    ds.to_parquet(tmp_path / "b.parquet", row_group_size=250)
    disk = read_parquet(tmp_path / "b.parquet", in_ram=False)
    assert isinstance(disk, ParquetDataset) and not disk.in_ram
    rows = np.random.default_rng(1).choice(1500, 64, replace=True) + 1000  # row groups 4 to 9
    disk.io_stats.track_chunks()
    for g in ("png", "png2d"):
        values, offsets = disk.ragged(g, rows)
        want_values, want_offsets = ds.ragged(g, rows)
        assert_bitwise(values, want_values)
        assert_bitwise(offsets, want_offsets)
    touched = set(np.searchsorted(disk.row_group_rows[1:], rows, side="right").tolist())
    for g in ("png", "png2d"):
        assert {k for (key, k) in disk.io_stats.per_chunk if key == f"{g}/values"} == touched
    assert set(disk.io_stats.per_chunk.values()) == {1}
    assert_same_dataset(disk.take(rows[::-1]), ds.take(rows[::-1]))


def test_on_disk_dataset_pickles_and_batches_like_ram(tmp_path):
    ds = make_dataset(900, seed=7)
    ds.to_parquet(tmp_path / "p.parquet", row_group_size=200)
    disk = pickle.loads(pickle.dumps(read_parquet(tmp_path / "p.parquet", in_ram=False)))
    spec = lstm_data.BatchSpec.from_toml(lstm_data_examples() / "numu_v3.toml")
    a = lstm_data.Batches(disk, spec, Order(batch_size=128, shuffle=False))
    b = lstm_data.Batches(ds, spec, Order(batch_size=128, shuffle=False))
    from tests.helpers import assert_same_batch
    for i in (0, len(a) - 1):
        assert_same_batch(a[i], b[i])


def lstm_data_examples():
    from tests.helpers import EXAMPLES
    return EXAMPLES


def test_not_a_table_and_missing_pyarrow(monkeypatch):
    with pytest.raises(TypeError, match="pyarrow.Table"):
        from_arrow({"a": [1.0]})
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(ImportError, match=r"lstm_data\[parquet\]"):
        import_pyarrow()
