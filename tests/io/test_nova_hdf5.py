"""NOvA-style HDF5 tables: detection, exact values against h5py, names, schema, errors, several files."""
from __future__ import annotations

import subprocess
import sys
import warnings

import h5py
import numpy as np
import pytest

import lstm_data
from lstm_data import FormatError, Order, SchemaError
from lstm_data.data import synthetic
from lstm_data.io.dispatch import detect_format
from lstm_data.io.nova import PrecisionWarning, is_nova_file, read_nova
from lstm_data.io.schema import Schema
from tests.helpers import EXAMPLES, assert_bitwise, assert_same_dataset
from tests.nova_files import KEYS, PNG, make_tables, reference, write_nova

CVN = PNG + ".cvnpart"
PNG2D = PNG + "2d"


@pytest.fixture(scope="module")
def tables():
    return make_tables(300, seed=1)


@pytest.fixture(scope="module")
def nova(tmp_path_factory, tables):
    return write_nova(tmp_path_factory.mktemp("nova") / "nova.h5", tables)


def assert_matches_reference(ds, path, dtype=np.float32):
    """Every scalar and group of ``ds`` is bitwise what plain h5py slices give, row by row."""
    scalars, groups = reference(path, dtype)
    assert ds.scalar_names == list(scalars)
    assert list(ds.groups) == list(groups)
    for name, want in scalars.items():
        assert_bitwise(ds.scalar(name), want, name)
    for g, (names, values, offsets) in groups.items():
        assert ds.groups[g] == names
        got_values, got_offsets = ds.ragged(g)
        assert_bitwise(got_offsets, offsets, g)
        assert_bitwise(got_values, values, g)


def edited(tables, table, **columns):
    """A copy of ``tables`` with some columns of ``table`` replaced."""
    out = {t: dict(cols) for t, cols in tables.items()}
    out[table].update(columns)
    return out


# -- detection ---------------------------------------------------------------------------------
def test_detection_tells_nova_tables_from_the_other_hdf5_layouts(nova, tmp_path):
    assert is_nova_file(nova) and detect_format(nova) == "nova"
    synthetic.make_dataset(50, 0).to_hdf5(tmp_path / "ours.h5")
    with h5py.File(tmp_path / "vlen.h5", "w") as fh:
        fh.create_dataset("calE", data=np.ones(3, np.float32))
        cells = np.empty(3, dtype=object)
        cells[:] = [np.ones(k, np.float32) for k in (2, 0, 1)]
        fh.create_dataset("png.calE", data=cells, dtype=h5py.vlen_dtype(np.float32))
    with h5py.File(tmp_path / "nokeys.h5", "w") as fh:
        fh.create_group("meta").create_dataset("run", data=np.ones(3, np.uint32))
    (tmp_path / "broken.h5").write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 100)
    for name in ("ours.h5", "vlen.h5", "nokeys.h5", "broken.h5"):
        assert not is_nova_file(tmp_path / name), name
    assert detect_format(tmp_path / "ours.h5") == detect_format(tmp_path / "vlen.h5") == "hdf5"


# -- values ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_open_equals_plain_h5py_slices_bitwise(nova, dtype):
    ds = lstm_data.open(nova, dtype=dtype)
    assert len(ds) == 300 and ds.in_ram
    assert_matches_reference(ds, nova, dtype)


@pytest.mark.parametrize("chunk_rows, flat, compression", [(7, False, None), (1000, True, "lzf"),
                                                            (5, True, "gzip")])
def test_chunking_shapes_and_filters_give_the_same_numbers(tables, tmp_path, chunk_rows, flat,
                                                           compression):
    path = write_nova(tmp_path / "c.h5", tables, chunk_rows=chunk_rows, flat=flat,
                      compression=compression)
    assert_matches_reference(read_nova(path), path)


def test_names_missing_slices_zero_prongs_and_keys(nova, tables):
    ds = read_nova(nova)
    assert ds.scalar_names[:5] == list(KEYS) and ds.scalar("evt").dtype == np.int64
    assert list(ds.groups) == [PNG, CVN, PNG2D]
    assert ds.groups[PNG][:4] == [f"{PNG}.calE", f"{PNG}.dir[0]", f"{PNG}.dir[1]", f"{PNG}.dir[2]"]
    assert "rec.energy.numu.lstmnu[1]" in ds.scalar_names
    assert f"{PNG}.{PNG}_idx" in ds.groups[PNG]  # index columns are variables like any column
    lengths = np.diff(ds.offsets(PNG))
    assert list(lengths[:3]) == [0, 4, 0] and (lengths == 0).sum() > 30
    assert np.array_equal(ds.offsets(PNG), ds.offsets(CVN))
    have = tables["rec.energy.numu"]
    missing = np.isnan(ds.scalar("rec.energy.numu.E"))
    assert missing.sum() == 300 - len(have["evt"])
    kept = np.flatnonzero(~missing)
    assert np.array_equal(ds.scalar("evt")[kept], have["evt"])
    assert ds.slice_tables == ("rec.energy.numu", "rec.mc.nu", "rec.slc") and ds.notes == ()


def test_every_dataset_is_read_once_in_whole_chunks(nova, monkeypatch):
    reads: dict[str, list[tuple[int, int]]] = {}
    original = h5py.Dataset.__getitem__

    def spy(self, key):
        if isinstance(key, slice):
            reads.setdefault(self.name, []).append((key.start, key.stop))
        return original(self, key)

    monkeypatch.setattr(h5py.Dataset, "__getitem__", spy)
    read_nova(nova)
    with h5py.File(nova) as fh:
        for t in fh:
            for c in fh[t]:
                ds = fh[t][c]
                got = sorted(reads.pop(ds.name))
                assert got[0][0] == 0 and got[-1][1] == len(ds), ds.name
                for (a, b), (a2, _) in zip(got, got[1:] + [(len(ds), None)]):
                    assert b == a2 and a % ds.chunks[0] == 0, (ds.name, got)
    assert not reads


def test_integer_keys_stay_exact_whatever_their_spread(tmp_path):
    """Keys spreading over more than 63 bits together (ranked codes) and negative cycles."""
    keys = np.array([[0, 0, -3, 0, 0], [0, 0, -3, 2**32 - 1, 1], [5, 2**32 - 1, 7, 1, 0],
                     [2**32 - 1, 0, 0, 0, 65535], [2**32 - 1, 1, -2**31, 0, 0]], np.int64)
    dtypes = [np.uint32, np.uint32, np.int32, np.uint32, np.uint16]
    key_cols = {k: keys[:, j].astype(dt) for j, (k, dt) in enumerate(zip(KEYS, dtypes))}
    counts = np.array([2, 0, 1, 3, 0])
    prong_keys = {k: np.repeat(v, counts) for k, v in key_cols.items()}
    path = write_nova(tmp_path / "wide.h5", {
        "rec.slc": {**key_cols, "calE": np.arange(5, dtype=np.float32)},
        PNG: {**prong_keys, "calE": np.arange(6, dtype=np.float64) / 3}})
    ds = read_nova(path)
    assert_matches_reference(ds, path)
    assert list(np.diff(ds.offsets(PNG))) == [2, 0, 1, 3, 0]
    assert ds.scalar("run")[-1] == 2**32 - 1 and ds.scalar("cycle")[-1] == -2**31


def test_integers_float32_cannot_hold_warn_with_the_row(tables, tmp_path):
    n = len(tables["rec.slc"]["evt"])
    big = np.arange(n, dtype=np.uint32)
    big[5] = 2**24 + 1
    path = write_nova(tmp_path / "big.h5", edited(tables, "rec.slc", nhit=big))
    with pytest.warns(PrecisionWarning, match=r"'rec.slc.nhit'.*row 5: 16777217"):
        ds = read_nova(path)
    assert ds.scalar("rec.slc.nhit")[5] == 2**24
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_nova(path, dtype=np.float64).scalar("rec.slc.nhit")[5] == 2**24 + 1


# -- schema ------------------------------------------------------------------------------------
def test_tables_slice_table_and_aliases_as_options(nova):
    ds = read_nova(nova, tables=["rec.slc", "rec.mc.nu", PNG + "*"], slice_table="rec.slc",
                   aliases={"png": PNG, "trueE": "rec.mc.nu.E", "event": "evt"})
    assert list(ds.groups) == ["png", "png.cvnpart", PNG2D]  # aliases continue at a dot only
    assert ds.groups["png"][0] == "png.calE" and "png.cvnpart.muonid" in ds.groups["png.cvnpart"]
    assert "trueE" in ds.scalar_names and "event" in ds.scalar_names
    assert not any(s.startswith("rec.energy") for s in ds.scalar_names)
    full = read_nova(nova)
    assert_bitwise(ds.ragged("png")[0], full.ragged(PNG)[0])
    assert_bitwise(ds.scalar("trueE"), full.scalar("rec.mc.nu.E"))


def test_schema_toml_aliases_groups_across_tables_and_scalars(nova, tmp_path):
    (tmp_path / "s.toml").write_text(f'''
dtype = "float64"
scalars = ["evt", "calE", "trueE"]
[aliases]
png = "{PNG}"
calE = "rec.slc.calE"
trueE = "rec.mc.nu.E"
[groups]
png = ["png.calE", "png.len", "png.cvnpart.muonid"]
nu = ["rec.energy.numu.E", "rec.energy.numu.hadcalE"]
''')
    ds = lstm_data.open(nova, schema=tmp_path / "s.toml")
    full = read_nova(nova, dtype=np.float64)
    assert ds.scalar_names == ["evt", "calE", "trueE"]
    assert list(ds.groups) == ["png", "nu", PNG2D]  # declared first; the cvnpart table is used up
    values, offsets = ds.ragged("png")
    png_values, png_offsets = full.ragged(PNG)
    cvn_values = full.ragged(CVN)[0]
    assert_bitwise(offsets, png_offsets)
    assert_bitwise(values[:, :2], png_values[:, [full.groups[PNG].index(f"{PNG}.{c}") for c in ("calE", "len")]])
    assert_bitwise(values[:, 2], cvn_values[:, full.groups[CVN].index(f"{CVN}.muonid")])
    nu_values, nu_offsets = ds.ragged("nu")  # a per-slice table declared a group: 0 or 1 rows
    energy = full.scalar("rec.energy.numu.E")
    assert_bitwise(np.diff(nu_offsets), (~np.isnan(energy)).astype(np.int64))
    assert_bitwise(nu_values[:, 0], energy[~np.isnan(energy)])


def test_table_entries_are_refused_by_column_formats(tmp_path):
    (tmp_path / "a.csv").write_text("a,png.x\n1,\"1,2\"\n")
    with pytest.raises(SchemaError, match="aliases apply to NOvA HDF5 tables only"):
        lstm_data.open(tmp_path / "a.csv", schema=Schema(aliases={"b": "a"}))
    assert Schema.from_dict(Schema(tables=["x*"], aliases={"b": "a"}).to_dict()).aliases == {"b": "a"}


# -- errors ------------------------------------------------------------------------------------
def _swap_rows(cols, i, j):
    out = {}
    for c, v in cols.items():
        v = v.copy()
        v[[i, j]] = v[[j, i]]
        out[c] = v
    return out


def test_unsorted_keys_name_table_row_and_key(tables, tmp_path):
    path = write_nova(tmp_path / "u.h5", {**tables, "rec.slc": _swap_rows(tables["rec.slc"], 10, 11)})
    with pytest.raises(FormatError, match=r"table 'rec.slc' is not sorted .* row 11 has key run="
                       ) as info:
        read_nova(path)
    assert info.value.file == str(path) and info.value.row == 11 and info.value.variable == "rec.slc"


def test_rows_of_one_slice_apart_are_unsorted(tables, tmp_path):
    cols = tables[PNG2D]
    key = [tuple(int(cols[k][r]) for k in KEYS) for r in range(len(cols["evt"]))]
    i = next(r for r in range(1, len(key) - 1) if key[r - 1] == key[r] != key[r + 1])
    # the second row of a slice with two prongs moves to after the next slice's first row
    order = np.arange(len(cols["evt"]))
    order[i:i + 2] = [i + 1, i]
    path = write_nova(tmp_path / "a.h5", {**tables, PNG2D: {c: v[order] for c, v in cols.items()}})
    with pytest.raises(FormatError, match=rf"table '{PNG2D}' is not sorted.*rows of one slice must be "
                       "adjacent"):
        read_nova(path)


def test_prong_key_that_is_no_slice(tables, tmp_path):
    evt = tables[PNG]["evt"].copy()
    evt[7] += 1000  # still sorted: the first rows belong to the first slices, then a gap
    cols = {**tables[PNG], "evt": evt}
    order = np.lexsort([cols[k].reshape(-1) for k in reversed(KEYS)])
    path = write_nova(tmp_path / "p.h5", {**tables, PNG: {c: v[order] for c, v in cols.items()}})
    with pytest.raises(FormatError, match=rf"table '{PNG}': row \d+ has key .*evt={int(evt[7])}.* not "
                       "a slice of the tables with one row per key") as info:
        read_nova(path)
    assert info.value.row is not None


def test_slice_table_must_hold_every_key(nova):
    with pytest.raises(FormatError, match=r"table 'rec.mc.nu': row \d+ has key .* not a slice of slice "
                       "table 'rec.energy.numu'"):
        read_nova(nova, slice_table="rec.energy.numu")
    with pytest.raises(SchemaError, match=rf"slice table '{PNG}' has 4 rows for key .*row 0"):
        read_nova(nova, slice_table=PNG)


def test_group_over_tables_that_do_not_share_rows(nova):
    with pytest.raises(SchemaError, match=rf"group 'p' takes variables from tables '{PNG}' and '{PNG2D}', "
                       r"which must share rows but disagree at key run=\d+ .*: \d+ rows in"):
        read_nova(nova, schema={"p": [f"{PNG}.calE", f"{PNG2D}.calE"]})


def test_group_over_tables_whose_rows_are_in_another_order(tables, tmp_path):
    idx = tables[CVN][f"{PNG}_idx"].copy()
    idx[:4] = idx[:4][::-1]  # the 4 prongs of slice 1 listed in another order in cvnpart
    path = write_nova(tmp_path / "o.h5", edited(tables, CVN, **{f"{PNG}_idx": idx}))
    assert len(read_nova(path)) == 300  # apart, each table is fine
    with pytest.raises(SchemaError, match=rf"index column '{PNG}_idx' differs at row 0 \(key run=") as info:
        read_nova(path, schema={"p": [f"{PNG}.calE", f"{CVN}.muonid"]})
    assert info.value.row == 0


@pytest.mark.parametrize("edit, error, message", [
    (lambda t: {**t, "rec.slc": {c: v for c, v in t["rec.slc"].items() if c != "cycle"}},
     FormatError, r"table 'rec.slc' has no key column 'cycle'"),
    (lambda t: edited(t, "rec.slc", calE=np.ones(299, np.float32)),
     FormatError, r"table 'rec.slc': column '(calE|cycle)' has (299|300) rows but"),
    (lambda t: edited(t, "rec.slc", evt=t["rec.slc"]["evt"].astype(np.float64)),
     FormatError, r"column 'rec.slc/evt' has dtype float64 .* expected integers"),
    (lambda t: edited(t, "rec.slc", evt=np.repeat(t["rec.slc"]["evt"][:, None], 2, axis=1)),
     FormatError, r"key column 'rec.slc/evt' has shape \(300, 2\)"),
])
def test_bad_tables_are_format_errors(tables, tmp_path, edit, error, message):
    path = write_nova(tmp_path / "b.h5", edit(tables))
    with pytest.raises(error, match=message) as info:
        read_nova(path)
    assert info.value.file == str(path)


def test_names_the_options_get_wrong(nova):
    with pytest.raises(SchemaError, match=r"unknown table 'rec.slcc'; did you mean 'rec.slc'"):
        read_nova(nova, tables=["rec.slcc"])
    with pytest.raises(SchemaError, match=r"unknown table or variable 'rec.slc.calEE'"):
        read_nova(nova, aliases={"x": "rec.slc.calEE"})
    with pytest.raises(SchemaError, match=r"two variables are named 'rec.slc.nhit'"):
        read_nova(nova, aliases={"rec.slc.nhit": "rec.slc.calE"})
    with pytest.raises(SchemaError, match=rf"'{PNG}.calE' is declared a scalar, but its table .* has 4 "
                       "rows for key"):
        read_nova(nova, schema={"scalars": [f"{PNG}.calE"]})
    with pytest.raises(SchemaError, match="tables given both as an option"):
        read_nova(nova, tables=["rec.slc"], schema={"tables": ["rec.mc.nu"]})
    with pytest.raises(ValueError, match="dtype must be float32 or float64"):
        read_nova(nova, dtype=np.int32)


def test_no_table_with_one_row_per_key(tables, tmp_path):
    path = write_nova(tmp_path / "n.h5", {PNG: tables[PNG]})
    with pytest.raises(FormatError, match="no table has at most one row per key"):
        read_nova(path)


def test_damaged_chunk_is_a_format_error_naming_dataset_and_chunk(tables, tmp_path):
    path = write_nova(tmp_path / "d.h5", tables, chunk_rows=64)
    with h5py.File(path) as fh:
        info = fh[PNG]["len"].id.get_chunk_info(2)
    with open(path, "r+b") as fh:
        fh.seek(info.byte_offset + 4)
        fh.write(b"\xff" * 40)
    with pytest.raises(FormatError, match=rf"chunk 2 \(records 128:192\) of dataset '{PNG}/len'") as err:
        lstm_data.open(path)
    assert err.value.file == str(path)


def test_files_without_checksums_get_a_note(tables, tmp_path):
    path = write_nova(tmp_path / "raw.h5", tables, compression=None)
    assert "neither a fletcher32 checksum nor gzip" in read_nova(path).notes[0]
    assert read_nova(write_nova(tmp_path / "f.h5", tables, compression="lzf", fletcher32=True)).notes == ()


# -- several files -----------------------------------------------------------------------------
def test_several_files_through_open_and_glob(tmp_path):
    paths = [write_nova(tmp_path / f"part{k}.h5", make_tables(120, seed=k)) for k in range(3)]
    by_list = lstm_data.open(paths)
    by_glob = lstm_data.open(str(tmp_path / "part*.h5"))
    parts = [read_nova(p) for p in paths]
    assert len(by_list) == len(by_glob) == sum(len(p) for p in parts)
    rows = np.arange(len(by_list))[::-1]
    for name in ["evt", "rec.energy.numu.E"]:
        assert_bitwise(by_glob.scalar(name), np.concatenate([p.scalar(name) for p in parts]))
    values, offsets = by_list.ragged(PNG, rows)
    want = by_list.take(rows).ragged(PNG)
    assert_bitwise(values, want[0])
    assert_bitwise(offsets, want[1])
    assert_bitwise(by_list.ragged(PNG)[0], np.concatenate([p.ragged(PNG)[0] for p in parts]))


# -- the shipped sample ------------------------------------------------------------------------
def test_shipped_sample_gives_the_numu_v3_batches_and_is_reproducible(tmp_path):
    from lstm_data import Batches, BatchSpec

    sample = EXAMPLES / "nova_sample.h5"
    assert sample.stat().st_size < 300_000
    ds = lstm_data.open(sample, schema=EXAMPLES / "nova_sample.toml")
    spec = BatchSpec.from_toml(EXAMPLES / "numu_v3.toml")
    x, y, _ = Batches(ds, spec, Order(batch_size=256, seed=0))[0]
    assert x["input_png3d"].shape == (256, 10, 33) and x["input_png2d"].shape == (256, 10, 13)
    assert np.isnan(ds.scalar("trueE")).sum() == 40  # slices without a matched neutrino
    subprocess.run([sys.executable, str(EXAMPLES / "make_nova_sample.py"), str(tmp_path / "s.h5")],
                   check=True, capture_output=True)
    assert_same_dataset(read_nova(tmp_path / "s.h5"), read_nova(sample))


def test_files_that_classify_a_table_differently_join_with_a_declared_group(tmp_path):
    one = make_tables(120, seed=4)
    slice_code = one[PNG2D]["evt"].astype(np.int64) * 8 + one[PNG2D]["subevt"]
    keep = np.sort(np.unique(slice_code, return_index=True)[1])  # the first 2D prong of each slice
    one[PNG2D] = {c: v[keep] for c, v in one[PNG2D].items()}
    paths = [write_nova(tmp_path / "a.h5", one), write_nova(tmp_path / "b.h5", make_tables(100, seed=5))]
    assert PNG2D + ".calE" in read_nova(paths[0]).scalar_names  # one prong at most: scalars here
    with pytest.raises(SchemaError, match="a.h5|b.h5"):
        lstm_data.open(paths)
    both = lstm_data.open(paths, schema={"groups": {PNG2D: PNG2D + ".*"}})
    assert len(both) == 220 and both.groups[PNG2D] == [f"{PNG2D}.calE", f"{PNG2D}.nplane"]
    lengths = np.diff(both.offsets(PNG2D))
    assert lengths[:120].max() == 1 and lengths[:120].sum() == len(keep)
