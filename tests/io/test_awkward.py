"""awkward arrays in and out: values bitwise equal to ``ak.to_list``; the round trip is exact."""
from __future__ import annotations

import numpy as np
import pytest

import lstm_data
from lstm_data.data.synthetic import make_dataset
from lstm_data.errors import SchemaError
from tests.helpers import assert_bitwise, assert_same_dataset, root_events

ak = pytest.importorskip("awkward")
from lstm_data.io.awkward import from_awkward, to_awkward  # noqa: E402


def _events(n=200, seed=0):
    cols = root_events(n, seed)
    cols["png.calE"] = cols.pop("Jet_e")  # one prefix group named CSV-style, one ROOT-style
    cols["png.nhit"] = cols.pop("Jet_pt")
    cols["Muon_iso"] = ak.values_astype(cols["Muon"].pt * 2, np.float32)  # joins the record's group
    return ak.Array(cols)


def _column(array, field, dtype):
    """A field's numbers in row order, through ``ak.to_list`` (the reference)."""
    items = ak.to_list(array[field])
    flat = [x for row in items for x in row] if items and isinstance(items[0], list) else items
    return np.array(flat, dtype=dtype)


def test_fields_equal_to_list_bitwise():
    arr = _events()
    ds = lstm_data.from_awkward(arr)
    assert ds.scalar_names == ["run", "event", "MET_pt", "weight", "passed"]
    assert ds.groups == {"Muon": ["Muon_pt", "Muon_eta", "Muon_charge", "Muon_iso"],
                         "png": ["png.calE", "png.nhit"]}
    for s in ds.scalar_names:
        assert_bitwise(ds.scalar(s), _column(arr, s, arr[s].layout.data.dtype), s)
    values, offsets = ds.ragged("Muon")
    assert values.dtype == np.float64
    assert_bitwise(offsets, np.concatenate([[0], np.cumsum(ak.num(arr.Muon).to_numpy())]).astype(np.int64))
    for j, (field, inner) in enumerate([("Muon", "pt"), ("Muon", "eta"), ("Muon", "charge")]):
        want = [m[inner] for row in ak.to_list(arr[field]) for m in row]
        assert_bitwise(values[:, j], np.array(want, dtype=np.float64))
    assert_bitwise(values[:, 3], _column(arr, "Muon_iso", np.float32).astype(np.float64))
    png, _ = ds.ragged("png")
    assert png.dtype == np.float32
    assert_bitwise(png[:, 1], _column(arr, "png.nhit", np.float32))


def test_scalars_are_not_copied_and_groups_only_interleaved():
    arr = _events()
    ds = from_awkward(arr)
    assert np.shares_memory(ds.scalar("MET_pt"), arr.layout.contents[arr.fields.index("MET_pt")].data)


def test_round_trip_is_bitwise_names_included():
    csv_like = make_dataset(300, seed=2)  # png.calE, png2d.* (float32), scalars
    for ds in (csv_like, from_awkward(_events())):
        arr = ds.to_awkward()
        back = from_awkward(arr)
        assert_same_dataset(back, ds)
    arr = csv_like.to_awkward()
    assert "calE" in arr.png.fields  # the group's record fields drop the 'png.' prefix
    values, _ = csv_like.ragged("png")
    inner = ak.to_layout(arr).contents[arr.fields.index("png")].content.contents[0]
    assert np.shares_memory(inner.data, values)  # views of the dataset, no copy


def test_to_awkward_to_list():
    ds = from_awkward(_events(20))
    got = ak.to_list(to_awkward(ds))
    mu_values, mu_offsets = ds.ragged("Muon")
    for i, row in enumerate(got):
        assert row["MET_pt"] == float(ds.scalar("MET_pt")[i])
        want = mu_values[mu_offsets[i]:mu_offsets[i + 1]]
        assert [[m["pt"], m["eta"], m["charge"], m["iso"]] for m in row["Muon"]] == want.tolist()


def test_options_lists_and_indexed_layouts_are_normalised():
    arr = ak.Array({"x": [1.5, None, 3.0], "k": [1, None, 2], "a_v": [[1.0, None], None, [2.0]],
                    "a_w": [[1.0, 2.0], [], [3.0]]})
    arr = ak.with_field(arr, ak.values_astype(arr.x, np.float32), "x")
    ds = from_awkward(arr)
    assert_bitwise(ds.scalar("x"), np.array([1.5, np.nan, 3.0], dtype=np.float32))  # float32 stays
    assert_bitwise(ds.scalar("k"), np.array([1.0, np.nan, 2.0]))  # ints with None: float64
    values, offsets = ds.ragged("a")
    assert offsets.tolist() == [0, 2, 2, 3]  # a missing list is empty (a_w has [] there too)
    assert_bitwise(values[:, 0], np.array([1.0, np.nan, 2.0]))
    picked = arr[[2, 0, 2]]  # IndexedArray / ListArray layouts
    assert_same_dataset(from_awkward(picked), ds.take([2, 0, 2]))


def test_errors_name_the_field():
    with pytest.raises(SchemaError, match=r"nothing to read.*skipped 'name' \(string: text, not numbers\), "
                                          r"'hits' \(var \* var \* float64: a list of lists"):
        from_awkward(ak.Array({"name": ["a", "b"], "hits": [[[1.0]], []]}))
    with pytest.raises(SchemaError, match="expected an array of records"):
        from_awkward(ak.Array([[1.0], []]))
    unequal = ak.Array({"a_v": [[1.0], [1.0, 2.0]], "a_w": [[1.0], [1.0]]})
    assert from_awkward(unequal).groups == {"a": ["a_v"], "a_w": ["a_w"]}  # inferred: cut by lengths
    with pytest.raises(SchemaError, match=r"group 'a': 'a_w' has 1 values but 'a_v' has 2 in row 1") as err:
        from_awkward(unequal, schema={"a": ["a_v", "a_w"]})  # declared: an error
    assert (err.value.variable, err.value.row) == ("a_w", 1)


def test_dict_input_dtype_schema_and_sep():
    arr = _events(50)
    ds = from_awkward({f: arr[f] for f in ("MET_pt", "Muon")}, dtype=np.float32, sep=".")
    assert ds.groups == {"Muon": ["Muon.pt", "Muon.eta", "Muon.charge"]}
    assert ds.ragged("Muon")[0].dtype == np.float32 and ds.scalar("MET_pt").dtype == np.float32
    picked = from_awkward(arr, schema={"groups": {"mu": ["Muon_pt"]}, "scalars": ["run"], "dtype": "float64"})
    assert picked.scalar_names == ["run"] and picked.groups["mu"] == ["Muon_pt"]
    assert picked.scalar("run").dtype == np.float64
