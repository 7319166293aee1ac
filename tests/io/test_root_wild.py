"""ROOT files as found in the wild: what is read, what is skipped and listed, and the errors that say why.

Files are written here by uproot; shapes only ROOT itself writes come from small real files under
``tests/data/`` (see its README).
"""
from __future__ import annotations

import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

import lstm_data
from lstm_data.errors import SchemaError
from tests.helpers import assert_bitwise, root_events, write_root

uproot = pytest.importorskip("uproot")
ak = pytest.importorskip("awkward")
from lstm_data.io.root import read_root  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data"


def _flat(array):
    return ak.to_numpy(ak.flatten(array))


def test_integer_and_boolean_groups_keep_one_numeric_dtype(tmp_path):
    rng = np.random.default_rng(5)
    n = rng.integers(0, 4, 300)
    total = int(n.sum())
    cols = {
        "Muon": ak.unflatten(ak.zip({"charge": rng.choice(np.array([-1, 1], np.int32), total),
                                     "jetIdx": rng.integers(-1, 9, total).astype(np.int16)}), n),
        "Trig": ak.unflatten(ak.zip({"pass": rng.random(total) < 0.5, "bits": rng.random(total) < 0.1}), n),
        "Jet": ak.unflatten(ak.zip({"pt": rng.random(total).astype(np.float32),
                                    "id": rng.integers(0, 7, total).astype(np.int32)}), n),
    }
    path = write_root(tmp_path / "ints.root", {"Events": cols})
    ds = read_root(path)
    want = {"Muon": np.int32, "Trig": np.bool_, "Jet": np.float64}  # int16+int32, bool, float32+int32
    with uproot.open(path) as fh:
        ref = fh["Events"].arrays()
    for g, dtype in want.items():
        values, offsets = ds.ragged(g)
        assert values.dtype == dtype, g
        assert_bitwise(offsets, np.concatenate([[0], np.cumsum(n)]).astype(np.int64), g)
        for j, v in enumerate(ds.groups[g]):
            assert_bitwise(values[:, j], _flat(ref[v]).astype(dtype), v)


def test_string_branches_are_skipped_and_listed(tmp_path, caplog):
    path = tmp_path / "mixed.root"
    with uproot.recreate(path) as fh:
        fh.mktree("Events", {"x": np.float64, "label": "string"})
        fh["Events"].extend({"x": np.arange(5.0), "label": ["a", "bb", "", "c", "d"]})
    with caplog.at_level(logging.INFO, logger="lstm_data"):
        ds = lstm_data.open(path)
    assert ds.scalar_names == ["x"] and len(ds) == 5
    assert list(ds.skipped) == ["label"] and "text, not numbers" in ds.skipped["label"]
    assert "skipped 1 branches" in caplog.text and "'label'" in caplog.text


def test_tree_with_entries_and_nothing_numeric_lists_what_it_holds(tmp_path):
    path = tmp_path / "strings.root"
    with uproot.recreate(path) as fh:
        fh.mktree("Names", {"first": "string", "last": "string"})
        fh["Names"].extend({"first": ["a", "b", "c"], "last": ["x", "y", "z"]})
    with pytest.raises(SchemaError, match=r"tree 'Names': nothing to read: 3 entries but no branch of "
                                          r"numbers.*'first' \(char\*: text, not numbers\), 'last'") as err:
        lstm_data.open(path)
    assert err.value.file == str(path)


def test_doubly_jagged_branch_is_skipped_with_its_type_real_file():
    """uproot cannot write vector<vector<double>>: a small file ROOT wrote, holding only that."""
    path = DATA / "uproot-vectorVectorDouble.root"
    message = (r"tree 't': nothing to read: 5 entries .* 'x' "
               r"\(std::vector<std::vector<double>>: a list of lists")
    with pytest.raises(SchemaError, match=message):
        lstm_data.open(path)


def test_fixed_size_inside_lists_is_a_group_per_element():
    """``var * 3 * float64`` (uproot writes such a TTree branch but cannot read it back, so awkward here)."""
    p = ak.to_regular(ak.Array([[[1.0, 2.0, 3.0]], [], [[4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]]), axis=2)
    ds = lstm_data.from_awkward({"p": p, "n": np.arange(3)})
    assert ds.groups == {"p": ["p[0]", "p[1]", "p[2]"]} and ds.scalar_names == ["n"]
    values, offsets = ds.ragged("p")
    assert_bitwise(offsets, np.array([0, 1, 1, 3], dtype=np.int64))
    assert_bitwise(values, np.arange(1.0, 10.0).reshape(3, 3))


def test_branches_without_entries_are_skipped_real_file():
    """An ALICE tree whose fTracks.* branches have no basket: the rest opens with the tree's entries."""
    path = DATA / "uproot-issue327.root"
    ds = lstm_data.open(f"{path}:DstTree")
    assert len(ds) == 98
    empty = [k for k, why in ds.skipped.items() if "holds 0 of the tree's 98 entries" in why]
    assert "Event/AliReducedBaseEvent/fTracks/fTracks.fTPCPt" in empty and len(empty) > 20
    with uproot.open(path) as fh:
        ref = fh["DstTree"]["Event/AliReducedBaseEvent/fRunNo"].array(library="np")
    assert_bitwise(ds.scalar("Event/AliReducedBaseEvent/fRunNo"), ref)


def test_two_branches_of_one_name_say_which_and_how_to_pick(tmp_path):
    path = f"{DATA / 'uproot-issue443.root'}:muonDataTree"
    with pytest.raises(SchemaError, match=r"'hitEnd' twice .* exclude=\['hitEnd;2\*'\] \(keeps the first\)") \
            as err:
        lstm_data.open(path)
    assert err.value.variable == "hitEnd"
    first = lstm_data.open(path, exclude=["hitEnd;2*"])
    with uproot.open(DATA / "uproot-issue443.root") as fh:
        branches = [b for b in fh["muonDataTree"].branches if b.name == "hitEnd"]
    assert len(branches) == 2
    names = [n for n in first.scalar_names + [v for vs in first.groups.values() for v in vs]
             if n.startswith("hitEnd")]
    assert names and all(";2" not in n for n in names)
    second = lstm_data.open(path, exclude=["hitEnd/*", "hitEnd"])
    assert any(n.startswith("hitEnd;2") for n in second.scalar_names + sum(second.groups.values(), []))


def test_columns_and_exclude_read_only_the_chosen_branches(tmp_path):
    events = write_root(tmp_path / "events.root", {"Events": root_events(300, seed=4)})
    whole = read_root(events)
    ds = lstm_data.open(events, columns=["Muon_*", "MET_pt"])
    assert ds.scalar_names == ["MET_pt"] and ds.groups == {"Muon": ["Muon_pt", "Muon_eta", "Muon_charge"]}
    assert_bitwise(ds.ragged("Muon")[0], whole.ragged("Muon")[0])
    by_group = lstm_data.open(events, columns="Muon", exclude="Muon_eta")
    assert by_group.groups == {"Muon": ["Muon_pt", "Muon_charge"]} and by_group.scalar_names == []
    assert_bitwise(by_group.ragged("Muon")[0][:, 0], whole.ragged("Muon")[0][:, 0])
    with pytest.raises(SchemaError, match=r"columns='Muon_ptt' matches no column; did you mean 'Muon_pt'"):
        lstm_data.open(events, columns=["Muon_ptt"])
    # an excluded branch is not even read: damage every basket of Jet_e
    damaged = tmp_path / "damaged.root"
    shutil.copy(events, damaged)
    with uproot.open(events) as fh:
        branch = fh["Events"]["Jet_e"]
        spans = [(int(s), int(b)) for s, b in zip(branch.member("fBasketSeek"), branch.member("fBasketBytes"))
                 if b]
    with open(damaged, "r+b") as fh:
        for seek, nbytes in spans:
            fh.seek(seek + nbytes // 2)
            fh.write(b"\xff" * 16)
    with pytest.raises(lstm_data.errors.FormatError, match="Jet_e"):
        lstm_data.open(damaged)
    ok = lstm_data.open(damaged, exclude="Jet_e")
    assert ok.groups["Jet"] == ["Jet_pt"]


def test_rntuple_nested_records_flatten_and_strings_are_skipped(tmp_path):
    arr = ak.Array({
        "evt": np.arange(3, dtype=np.int64),
        "info": ak.zip({"run": np.array([1, 1, 2], np.int32),
                        "pos": ak.zip({"x": np.array([1.0, 2, 3]), "y": np.array([4.0, 5, 6])})},
                       depth_limit=1),
        "Electrons": ak.zip({"pt": ak.Array([[1.0, 2], [], [3.0]]), "eta": ak.Array([[0.1, 0.2], [], [0.3]])},
                            depth_limit=1),
        "name": ["a", "bb", "c"], "hits": [[[1.0]], [], [[2.0, 3.0], []]]})
    path = tmp_path / "nested.root"
    with uproot.recreate(path) as fh:
        try:
            fh["T"] = arr
        except (TypeError, ValueError, NotImplementedError) as exc:
            pytest.skip(f"this uproot cannot write nested RNTuples ({exc})")
    ds = lstm_data.open(path)
    assert ds.scalar_names == ["evt", "info.run", "info.pos.x", "info.pos.y"]
    assert ds.groups == {"Electrons": ["Electrons.pt", "Electrons.eta"]}
    assert sorted(ds.skipped) == ["hits", "name"]
    assert_bitwise(ds.scalar("info.pos.y"), np.array([4.0, 5, 6]))
    values, offsets = ds.ragged("Electrons")
    assert_bitwise(offsets, np.array([0, 2, 2, 3], dtype=np.int64))
    assert_bitwise(values[:, 1], np.array([0.1, 0.2, 0.3]))
    only = lstm_data.open(path, columns=["info.*"])
    assert only.scalar_names == ["info.run", "info.pos.x", "info.pos.y"] and only.groups == {}


def test_leaf_list_branch_gives_dotted_columns_real_file():
    """``struct {double x; int32_t y; int8_t z;}`` (uproot cannot write one): ``leaflist.x``, ... with
    their own dtypes."""
    path = DATA / "uproot-leaflist.root"
    ds = lstm_data.open(path)
    assert ds.scalar_names == ["leaflist.x", "leaflist.y", "leaflist.z"] and ds.skipped == {}
    with uproot.open(path) as fh:
        ref = fh["tree"]["leaflist"].array(library="np")
    for f in ("x", "y", "z"):
        want = np.ascontiguousarray(ref[f]).astype(ref.dtype[f].newbyteorder("="))
        assert_bitwise(ds.scalar(f"leaflist.{f}"), want, f)


def test_objects_uproot_cannot_read_are_skipped_the_rest_opens_real_file():
    path = DATA / "uproot-issue475.root"
    ds = lstm_data.open(f"{path}:Event/Elec/ElecEvent")
    assert len(ds) == 10 and ds.scalar_names
    assert "uproot cannot read this object type" in ds.skipped["ElecEvent/fmc_tepos"]


def test_a_type_uproot_misreads_is_skipped_not_called_damage_real_file():
    path = DATA / "uproot-issue501.root"
    with pytest.raises(SchemaError, match=r"nothing to read: 1 entries .* 'point' \(AsDtype.*: uproot cannot "
                                          r"read this object type"):
        lstm_data.open(path)


def test_rntuple_columns_read_only_the_fields_they_need(tmp_path):
    arr = ak.Array({"evt": np.arange(4, dtype=np.int64), "x": np.arange(4.0),
                    "Jet": ak.zip({"pt": ak.Array([[1.0], [], [2.0, 3.0], []]),
                                   "m": ak.Array([[5.0], [], [6.0, 7.0], []])})})
    path = tmp_path / "rn.root"
    with uproot.recreate(path) as fh:
        try:
            fh["T"] = arr
        except (TypeError, ValueError, NotImplementedError) as exc:
            pytest.skip(f"this uproot cannot write RNTuples ({exc})")
    ds = lstm_data.open(path, columns=["Jet_p*", "x"])
    assert ds.scalar_names == ["x"] and ds.groups == {"Jet": ["Jet_pt"]}
    assert_bitwise(ds.ragged("Jet")[0][:, 0], np.array([1.0, 2.0, 3.0]))
    assert lstm_data.open(path, exclude="Jet").scalar_names == ["evt", "x"]
    with pytest.raises(SchemaError, match=r"columns='Jet_eta' matches no column; did you mean 'Jet_pt'"):
        lstm_data.open(path, columns=["Jet_eta"])
