"""NOvA HDF5 edge cases: empty tables, a duplicated key in a per-slice table."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import lstm_data
from lstm_data import BatchSpec, Order, Ragged, Scalars, SchemaError
from lstm_data.batching import Batches
from tests.nova_files import KEYS, PNG, make_tables, write_nova

CVN = PNG + ".cvnpart"


def emptied(tables, *names):
    out = {t: dict(cols) for t, cols in tables.items()}
    for name in names:
        out[name] = {c: v[:0] for c, v in out[name].items()}
    return out


@pytest.fixture()
def tables():
    return make_tables(60, seed=5)


def test_an_empty_prong_table_is_a_group_without_prongs_and_a_warning(tables, tmp_path):
    path = write_nova(tmp_path / "e.h5", emptied(tables, PNG, CVN))
    with pytest.warns(UserWarning, match=f"table '{PNG}' has no rows: read as the group") as record, \
         pytest.warns(UserWarning, match=f"table '{CVN}' has no rows"):  # its own table, emptied too
        ds = lstm_data.open(path)
    assert str(path) in str(record[0].message)
    full = lstm_data.open(write_nova(tmp_path / "f.h5", tables))
    assert len(ds) == len(full)
    assert not any(s.startswith(PNG + ".") for s in ds.scalar_names)  # no all-NaN scalars
    assert int(ds.offsets(PNG)[-1]) == 0 and ds.groups[PNG] == full.groups[PNG]
    np.testing.assert_array_equal(ds.scalar("rec.slc.calE"), full.scalar("rec.slc.calE"))
    spec = BatchSpec(inputs={"png": Ragged(ds.groups[PNG][:3], max_len=4, pad_value=np.nan),
                             "s": Scalars(["rec.slc.calE"])})
    batch = Batches(ds, spec, Order(batch_size=16, shuffle=False))[0]
    assert np.isnan(batch[0]["png"]).all()


def test_a_declared_group_over_two_empty_tables_opens(tables, tmp_path):
    path = write_nova(tmp_path / "e.h5", emptied(tables, PNG, CVN))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # declared: nothing to warn about
        ds = lstm_data.open(path, schema={"groups": {"png": [PNG + ".calE", CVN + ".muonid"]}})
    assert ds.groups["png"] == [PNG + ".calE", CVN + ".muonid"] and int(ds.offsets("png")[-1]) == 0


def test_an_empty_table_declared_as_scalars_is_nan(tables, tmp_path):
    path = write_nova(tmp_path / "e.h5", emptied(tables, "rec.energy.numu"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = lstm_data.open(path, schema={"scalars": ["evt", "rec.energy.numu.E", "rec.slc.calE"]})
    assert np.isnan(ds.scalar("rec.energy.numu.E")).all() and len(ds) == len(tables["rec.slc"]["evt"])


def test_a_file_of_empty_tables_has_no_slices(tables, tmp_path):
    path = write_nova(tmp_path / "e.h5", emptied(tables, *tables))
    with pytest.warns(UserWarning, match="has no rows"):
        ds = lstm_data.open(path)
    assert len(ds) == 0


def test_a_duplicated_key_in_a_per_slice_table_is_warned_and_refused_as_slice_table(tables, tmp_path):
    dup = {t: dict(cols) for t, cols in tables.items()}
    dup["rec.slc"] = {c: v.copy() for c, v in tables["rec.slc"].items()}
    for k in KEYS:
        dup["rec.slc"][k][8] = dup["rec.slc"][k][7]
    path = write_nova(tmp_path / "d.h5", dup)
    key = " ".join(f"{k}={int(tables['rec.slc'][k][7])}" for k in KEYS)
    with pytest.warns(UserWarning, match=f"table 'rec.slc' has 2 rows for key {key} \\(row 7\\)"):
        lstm_data.open(path)
    with pytest.raises(SchemaError, match=f"slice table 'rec.slc' has 2 rows for key {key} \\(row 7\\)") as err:
        lstm_data.open(path, slice_table="rec.slc")
    assert err.value.file == str(path)


def test_a_prong_table_with_an_index_column_and_rare_repeats_is_not_warned(tables, tmp_path):
    t = {name: dict(cols) for name, cols in tables.items()}
    n = len(t["rec.slc"]["evt"])
    counts = np.ones(n, np.int64)
    counts[3] = 2  # one slice with two vertices among many
    rows = np.repeat(np.arange(n), counts)
    t["rec.vtx"] = {k: t["rec.slc"][k][rows] for k in KEYS}
    t["rec.vtx"]["rec.vtx_idx"] = np.concatenate([np.arange(c) for c in counts]).astype(np.uint32)
    t["rec.vtx"]["x"] = np.arange(len(rows), dtype=np.float32)
    path = write_nova(tmp_path / "v.h5", t)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = lstm_data.open(path, tables=["rec.slc", "rec.vtx"])
    assert "rec.vtx" in ds.groups
