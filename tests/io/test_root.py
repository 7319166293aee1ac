"""ROOT TTrees through uproot: values bitwise equal to ``uproot ... .arrays(library="np")``."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import lstm_data
from lstm_data.errors import FormatError, SchemaError
from tests.helpers import assert_bitwise, assert_same_dataset, root_events, write_root

uproot = pytest.importorskip("uproot")
ak = pytest.importorskip("awkward")
from lstm_data.io.root import read_root  # noqa: E402

SCALARS = ["run", "event", "MET_pt", "weight", "passed", "nMuon", "nJet_e", "nJet_pt"]
GROUPS = {"Muon": ["Muon_pt", "Muon_eta", "Muon_charge"], "Jet": ["Jet_e", "Jet_pt"]}


@pytest.fixture(scope="module")
def events(tmp_path_factory):
    path = tmp_path_factory.mktemp("root") / "events.root"
    return write_root(path, {"Events": root_events(400, seed=3)}, parts=3)


def _reference(path, tree="Events"):
    with uproot.open(path) as fh:
        return fh[tree].arrays(library="np")


def test_flat_and_jagged_branches_equal_uproot_bitwise(events):
    ds = lstm_data.open(events)
    ref = _reference(events)
    assert ds.scalar_names == SCALARS and ds.groups == GROUPS and len(ds) == 400
    for s in SCALARS:  # each scalar keeps its branch's dtype: int32, uint64, float32, float64, bool
        assert_bitwise(ds.scalar(s), ref[s], s)
    for g, names in GROUPS.items():
        values, offsets = ds.ragged(g)
        lengths = np.array([len(x) for x in ref[names[0]]])
        assert_bitwise(offsets, np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64), g)
        dtype = np.result_type(*[ref[v][0].dtype for v in names])
        assert values.dtype == dtype  # Muon: float32 + float64 + int32 -> float64, exact
        for j, v in enumerate(names):
            assert_bitwise(values[:, j], np.concatenate(list(ref[v])).astype(dtype), v)


def test_counter_branch_names_the_group_and_stays_a_scalar(events):
    ds = read_root(events)
    counts = np.diff(ds.offsets("Muon"))
    assert_bitwise(ds.scalar("nMuon"), counts.astype(np.int32))
    assert (counts == 0).sum() > 100  # many entries with no muon at all


def test_small_entry_ranges_give_the_same_dataset(events):
    whole = read_root(events)
    for step in (1, 2000, 50_000):  # one entry, some entries, ranges across baskets
        assert_same_dataset(read_root(events, block_bytes=step), whole)


def test_dtype_option_and_schema(events):
    ds = read_root(events, dtype=np.float32)
    assert ds.ragged("Muon")[0].dtype == np.float32 and ds.scalar("event").dtype == np.float32
    ref = _reference(events)
    assert_bitwise(ds.ragged("Muon")[0][:, 1], np.concatenate(list(ref["Muon_eta"])).astype(np.float32))
    with pytest.raises(ValueError, match="float32 or float64"):
        read_root(events, dtype=np.int32)
    picked = read_root(events, schema={"groups": {"mu": ["Muon_pt", "Muon_eta"]},
                                       "scalars": ["MET_pt"], "dtype": "float64"})
    assert picked.scalar_names == ["MET_pt"]
    assert picked.groups == {"mu": ["Muon_pt", "Muon_eta"], "Muon": ["Muon_charge"],
                             "Jet": ["Jet_e", "Jet_pt"]}
    with pytest.raises(SchemaError, match="Muon_ptt"):
        read_root(events, schema={"mu": ["Muon_ptt"]})


def test_several_trees_need_tree_option(tmp_path):
    path = write_root(tmp_path / "two.root", {"Events": root_events(50), "Runs": {"run": np.arange(3)}})
    with pytest.raises(SchemaError, match=r"2 TTrees: 'Events', 'Runs'; pick one with tree=") as err:
        lstm_data.open(path)
    assert err.value.file == str(path)
    runs = lstm_data.open(path, tree="Runs")
    assert runs.scalar_names == ["run"] and len(runs) == 3
    assert read_root(path, tree="Events").groups == GROUPS
    with pytest.raises(SchemaError, match="no TTree 'Lumi'.*'Events', 'Runs'"):
        read_root(path, tree="Lumi")


def test_unequal_lengths_without_shared_counter(tmp_path):
    """Jagged branches with no counter that differ in length are separate groups (logged); declared
    in one group by a schema, the mismatch is an error naming branch and entry."""
    cols = root_events(90, seed=1)
    lengths = ak.num(cols["Jet_pt"]).to_numpy().copy()
    bad = int(np.flatnonzero(np.arange(90) >= 70)[0])  # in the third basket
    lengths[bad] += 1
    cols["Jet_pt"] = ak.unflatten(np.ones(lengths.sum(), dtype=np.float32), lengths)
    path = write_root(tmp_path / "bad.root", {"Events": cols})
    split = read_root(path, block_bytes=500)
    assert split.groups["Jet"] == ["Jet_e"] and split.groups["Jet_pt"] == ["Jet_pt"]
    assert_bitwise(np.diff(split.offsets("Jet_pt")), lengths.astype(np.int64))
    message = rf"tree 'Events': group 'Jet': 'Jet_pt' has .* entry {bad};"
    with pytest.raises(SchemaError, match=message) as err:
        read_root(path, block_bytes=500, schema={"Jet": ["Jet_e", "Jet_pt"]})
    assert (err.value.file, err.value.variable, err.value.row) == (str(path), "Jet_pt", bad)
    ok = read_root(path, schema={"Jet": ["Jet_e"], "JetPt": ["Jet_pt"]})
    assert ok.groups["JetPt"] == ["Jet_pt"]


def test_zero_entries_and_empty_jagged(tmp_path):
    muon = ak.zip({"pt": np.zeros(0, np.float32), "eta": np.zeros(0)})
    cols = {"x": np.zeros(0, np.float32), "Muon": ak.unflatten(muon, np.zeros(0, int))}
    path = write_root(tmp_path / "empty.root", {"Events": cols}, parts=1)
    ds = read_root(path)
    assert len(ds) == 0 and ds.groups == {"Muon": ["Muon_pt", "Muon_eta"]}
    assert ds.ragged("Muon")[0].shape == (0, 2)
    none = {"Muon": ak.unflatten(ak.zip({"pt": np.zeros(0, np.float32), "eta": np.zeros(0, np.float32)}),
                                 np.zeros(5, int))}
    ds = read_root(write_root(tmp_path / "nomuon.root", {"Events": none}))
    assert_bitwise(ds.offsets("Muon"), np.zeros(6, dtype=np.int64))


def test_fixed_size_branch_gives_one_scalar_per_element(tmp_path):
    path = tmp_path / "fixed.root"
    xyz = np.arange(12, dtype=np.float32).reshape(4, 3)
    with uproot.recreate(path) as fh:
        fh.mktree("Events", {"x": np.float32, "xyz": np.dtype((np.float32, (3,)))})
        fh["Events"].extend({"x": np.arange(4, dtype=np.float32), "xyz": xyz})
    ds = read_root(path)
    assert ds.scalar_names == ["x", "xyz[0]", "xyz[1]", "xyz[2]"] and ds.skipped == {}
    for i in range(3):
        assert_bitwise(ds.scalar(f"xyz[{i}]"), xyz[:, i].copy())


def test_no_ttree_and_not_root(tmp_path):
    path = tmp_path / "hist.root"
    with uproot.recreate(path) as fh:
        fh["h"] = np.histogram(np.arange(10.0), bins=3)
    with pytest.raises(FormatError, match="no TTree in this ROOT file; it holds 'h'"):
        lstm_data.open(path)


def test_damaged_basket_names_file_tree_branch_and_entries(events, tmp_path):
    path = tmp_path / "damaged.root"
    shutil.copy(events, path)
    with uproot.open(events) as fh:
        branch = fh["Events"]["Muon_eta"]
        seek, nbytes = int(branch.member("fBasketSeek")[1]), int(branch.member("fBasketBytes")[1])
        first, stop = (int(x) for x in branch.entry_offsets[1:3])
    with open(path, "r+b") as fh:
        fh.seek(seek + nbytes // 2)
        fh.write(b"\xff" * 32)
    with pytest.raises(FormatError, match=rf"tree 'Events': cannot read basket 1 \(entries {first}:{stop}\) "
                                          r"of branch 'Muon_eta'; damaged file\?") as err:
        lstm_data.open(path)
    assert (err.value.file, err.value.variable, err.value.row) == (str(path), "Muon_eta", first)


def test_truncated_file_is_a_format_error(events, tmp_path):
    data = events.read_bytes()
    for keep, match in ((300, "cannot open as a ROOT file"), (len(data) // 2, "cannot read")):
        path = tmp_path / f"cut{keep}.root"
        path.write_bytes(data[:keep])
        with pytest.raises(FormatError, match=match) as err:
            lstm_data.open(path)
        assert err.value.file == str(path)


def test_rntuple_gives_the_groups_of_the_same_ttree(events, tmp_path):
    cols = root_events(400, seed=3)  # the columns of the ``events`` TTree
    path = tmp_path / "rntuple.root"
    with uproot.recreate(path) as fh:
        try:
            fh["Events"] = cols  # uproot >= 5.7 writes an RNTuple by assignment
        except (TypeError, ValueError, NotImplementedError) as exc:
            pytest.skip(f"this uproot cannot write RNTuples ({exc})")
    rn, tt = lstm_data.open(path), read_root(events)
    assert sorted(rn.groups.items()) == sorted(GROUPS.items())
    assert sorted(rn.scalar_names) == sorted(s for s in SCALARS if not s.startswith("n"))
    for s in rn.scalar_names:
        assert_bitwise(rn.scalar(s), tt.scalar(s), s)
    for g in GROUPS:
        assert_bitwise(rn.ragged(g)[1], tt.ragged(g)[1], g)
        assert_bitwise(rn.ragged(g)[0], tt.ragged(g)[0], g)
