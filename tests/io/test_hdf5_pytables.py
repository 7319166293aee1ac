"""HDF5 files written by PyTables with columns that are not numbers (time, strings, enums,
complex, pseudo-atoms): the numeric ones open, the others are skipped and listed."""
from __future__ import annotations

import json
import logging
import warnings

import h5py
import numpy as np
import pytest

import lstm_data
from lstm_data import FormatError, SchemaError
from lstm_data.cli import main

tables = pytest.importorskip("tables")

N = 7


class Event(tables.IsDescription):
    calE = tables.Float32Col()
    nHit = tables.Int64Col()
    when = tables.Time64Col()
    stamp = tables.Time32Col()
    label = tables.StringCol(8)
    kind = tables.EnumCol(tables.Enum(["numu", "nue", "nc"]), "numu", base="uint8")
    good = tables.BoolCol()
    dir = tables.Float64Col(shape=(3,))
    z = tables.ComplexCol(itemsize=16)

    class vtx(tables.IsDescription):
        x = tables.Float32Col()
        t = tables.Time64Col()


def write_pytables(path, *, with_ragged=True):
    """A PyTables file: a Table with every kind of column, EArrays of time and strings, a VLArray."""
    rng = np.random.default_rng(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tables.NaturalNameWarning)
        with tables.open_file(str(path), "w") as f:
            t = f.create_table("/", "events", Event)
            row = t.row
            for i in range(N):
                row["calE"] = rng.gamma(2.0)
                row["nHit"] = 2**40 + i
                row["when"] = 1.7e9 + i
                row["stamp"] = i
                row["label"] = b"ev%d" % i
                row["kind"] = i % 3
                row["good"] = bool(i % 2)
                row["dir"] = rng.normal(size=3)
                row["z"] = 1 + 2j
                row["vtx/x"] = i * 0.5
                row["vtx/t"] = 2.0e9
                row.append()
            t.flush()
            f.create_earray("/", "trueE", atom=tables.Float32Atom(), shape=(0,)).append(
                rng.gamma(2.0, size=N).astype(np.float32))
            f.create_earray("/", "time", atom=tables.Time64Atom(), shape=(0,)).append(np.arange(N, dtype="f8"))
            f.create_earray("/", "name", atom=tables.StringAtom(4), shape=(0,)).append(np.array([b"ab"] * N))
            if with_ragged:
                vl = f.create_vlarray("/", "png.calE", atom=tables.Float32Atom(shape=()))
                for i in range(N):
                    vl.append(np.arange(i % 3, dtype=np.float32))
    return path


def pytables_column(path, node, col=None):
    with tables.open_file(str(path)) as f:
        n = f.get_node("/" + node)
        return n.col(col) if col is not None else n.read()


def test_numeric_columns_open_and_the_others_are_listed(tmp_path, caplog):
    path = write_pytables(tmp_path / "pt.h5")
    with caplog.at_level(logging.INFO, logger="lstm_data"):
        ds = lstm_data.open(path)
    assert len(ds) == N
    assert ds.scalar_names == ["events.calE", "events.dir[0]", "events.dir[1]", "events.dir[2]",
                               "events.good", "events.kind", "events.nHit", "events.vtx.x", "trueE"]
    np.testing.assert_array_equal(ds.scalar("events.calE"), pytables_column(path, "events", "calE"))
    np.testing.assert_array_equal(ds.scalar("events.nHit"), pytables_column(path, "events", "nHit"))
    assert ds.scalar("events.nHit").dtype == np.int64  # exact
    np.testing.assert_array_equal(ds.scalar("events.dir[2]"), pytables_column(path, "events", "dir")[:, 2])
    np.testing.assert_array_equal(ds.scalar("events.kind"), pytables_column(path, "events", "kind"))
    np.testing.assert_array_equal(ds.scalar("events.good"), pytables_column(path, "events", "good"))
    np.testing.assert_array_equal(ds.scalar("events.vtx.x"), pytables_column(path, "events", "vtx/x"))
    np.testing.assert_array_equal(ds.scalar("trueE"), pytables_column(path, "trueE"))
    assert list(ds.groups) == ["png"]
    assert set(ds.skipped) == {"events.when", "events.stamp", "events.label", "events.z", "events.vtx.t",
                               "time", "name"}
    assert "time" in ds.skipped["events.when"] and "string" in ds.skipped["events.label"]
    assert "complex" in ds.skipped["events.z"]
    logged = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    assert len(logged) == 1 and "events.when" in logged[0] and str(path) in logged[0]


def test_inspect_lists_the_skipped_columns(tmp_path, capsys):
    path = write_pytables(tmp_path / "pt.h5")
    assert main(["inspect", str(path), "--no-stats"]) == 0
    out = capsys.readouterr().out
    assert "skipped (7" in out and "events.label: strings of 8 bytes" in out
    assert main(["inspect", str(path), "--no-stats", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "time" in doc["skipped"]["events.when"]


def test_a_schema_naming_a_skipped_column_says_why(tmp_path):
    path = write_pytables(tmp_path / "pt.h5")
    with pytest.raises(SchemaError, match="strings of 8 bytes") as err:
        lstm_data.open(path, schema={"scalars": ["events.calE", "events.label"]})
    assert err.value.variable == "events.label"
    ds = lstm_data.open(path, schema={"scalars": ["events.calE"]})
    assert ds.scalar_names == ["events.calE"]


def test_a_file_with_nothing_numeric_lists_what_it_holds(tmp_path):
    path = tmp_path / "strings.h5"
    with tables.open_file(str(path), "w") as f:
        f.create_earray("/", "time", atom=tables.Time64Atom(), shape=(0,)).append(np.arange(3, dtype="f8"))
        f.create_earray("/", "name", atom=tables.StringAtom(4), shape=(0,)).append(np.array([b"ab"] * 3))
    with pytest.raises(FormatError, match="no numeric datasets") as err:
        lstm_data.open(path)
    assert "'time' (64-bit HDF5 time values" in str(err.value) and "'name' (strings" in str(err.value)


def test_h5py_string_and_object_datasets_are_skipped(tmp_path):
    path = tmp_path / "h.h5"
    with h5py.File(path, "w") as fh:
        fh["x"] = np.arange(4.0)
        fh["s"] = np.array(["a", "bb", "c", "d"], dtype=h5py.string_dtype())
        fh["one"] = 3.0
        fh["nothing"] = h5py.Empty("f8")
        fh["m"] = np.arange(8).reshape(4, 2)
        fh.create_group("sub")["y"] = np.arange(4.0)
    ds = lstm_data.open(path)
    assert ds.scalar_names == ["m[0]", "m[1]", "x"]
    np.testing.assert_array_equal(ds.scalar("m[1]"), [1, 3, 5, 7])
    assert ds.skipped == {"one": "a single value (shape ()), not a column",
                          "nothing": "no values (a null dataspace)",
                          "s": "variable-length strings", "sub": "a group (open it with root=...)"}


def test_floats_numpy_cannot_represent_are_skipped(tmp_path):
    """A 128-bit IEEE float (quad precision) as some tools write it: h5py has no numpy type for it."""
    path = tmp_path / "quad.h5"
    with h5py.File(path, "w") as fh:
        fh["x"] = np.arange(3.0)
        quad = h5py.h5t.IEEE_F64LE.copy()
        quad.set_size(16)
        quad.set_precision(128)
        quad.set_fields(127, 112, 15, 0, 112)
        quad.set_ebias(16383)
        h5py.h5d.create(fh.id, b"q", quad, h5py.h5s.create_simple((3,)))
    ds = lstm_data.open(path)
    assert ds.scalar_names == ["x"] and ds.skipped == {"q": "128-bit numbers that numpy cannot represent"}


def test_a_vlarray_of_arrays_gives_one_variable_per_element(tmp_path):
    path = tmp_path / "vla.h5"
    rows = [np.arange(6, dtype=np.float32).reshape(2, 3), np.zeros((0, 3), np.float32),
            np.full((1, 3), 7.5, np.float32)]
    with tables.open_file(str(path), "w") as f:
        vl = f.create_vlarray("/", "dir", atom=tables.Float32Atom(shape=(3,)))
        for r in rows:
            vl.append(r)
        f.create_earray("/", "calE", atom=tables.Float32Atom(), shape=(0,)).append(np.arange(3, dtype="f4"))
    ds = lstm_data.open(path)
    assert ds.groups == {"dir": ["dir[0]", "dir[1]", "dir[2]"]} and ds.skipped == {}
    values, offsets = ds.ragged("dir")
    np.testing.assert_array_equal(values, np.concatenate(rows))
    np.testing.assert_array_equal(offsets, [0, 2, 2, 3])
    ds = lstm_data.open(path, columns=["dir[1]"])
    np.testing.assert_array_equal(ds.ragged("dir")[0][:, 0], np.concatenate(rows)[:, 1])
