"""A ROOT file through ``lstm-data convert``, ``inspect`` and ``precompute``, and through ``Batches``."""
from __future__ import annotations

import json

import numpy as np
import pytest

import lstm_data
from lstm_data import Batches, BatchSpec, Order, open_batches
from lstm_data.cli import main
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.data.ragged import RaggedGroup
from tests.helpers import (
    assert_same_batch,
    assert_same_dataset,
    root_events,
    write_root,
)

ak = pytest.importorskip("awkward")
pytest.importorskip("uproot")

SPEC = """
[inputs.input_event]
type = "scalars"
vars = ["MET_pt", "nMuon", "passed"]

[inputs.input_muon]
type = "ragged"
pad_value = nan
max_len = 3
sort_by = "Muon_pt"
vars = ["Muon_pt", "Muon_eta", "Muon_charge"]

[inputs.input_jet]
type = "ragged"
pad_value = nan
max_len = 4
vars = ["Jet_e", "Jet_pt"]

[targets.target_weight]
type = "scalars"
vars = ["weight"]
"""


@pytest.fixture(scope="module")
def root_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("rootcli")
    cols = root_events(700, seed=11)
    return write_root(d / "events.root", {"Events": cols}), cols


def _in_ram(cols) -> InMemoryDataset:
    """The same columns as a dataset built by hand from numpy arrays (no reader involved)."""
    scalars = {k: np.asarray(cols[k]) for k in ("run", "event", "MET_pt", "weight", "passed")}
    scalars.update({"nMuon": ak.num(cols["Muon"]).to_numpy().astype(np.int32),
                    "nJet_e": ak.num(cols["Jet_e"]).to_numpy().astype(np.int32),
                    "nJet_pt": ak.num(cols["Jet_pt"]).to_numpy().astype(np.int32)})

    def group(names, arrays, lengths, dtype):
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        values = np.stack([ak.flatten(a).to_numpy().astype(dtype) for a in arrays], axis=1)
        return RaggedGroup(names, values, offsets)

    mu = cols["Muon"]  # float32, float64 and int32 fields: float64 values
    groups = {"Muon": group(["Muon_pt", "Muon_eta", "Muon_charge"], [mu.pt, mu.eta, mu.charge],
                            scalars["nMuon"], np.float64),
              "Jet": group(["Jet_e", "Jet_pt"], [cols["Jet_e"], cols["Jet_pt"]], scalars["nJet_e"],
                           np.float32)}
    return InMemoryDataset(scalars, groups)


def test_convert_and_inspect(root_file, tmp_path, capsys):
    path, cols = root_file
    ref = lstm_data.open(path)
    assert_same_dataset(ref, _in_ram(cols))
    for out in ("ev.zarr", "ev.h5"):
        assert main(["convert", str(path), str(tmp_path / out), "--quiet"]) == 0
        assert_same_dataset(lstm_data.open(tmp_path / out), ref)
    capsys.readouterr()
    assert main(["inspect", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["rows"] == 700
    assert [s["name"] for s in doc["scalars"]][:3] == ["run", "event", "MET_pt"]
    assert "Muon" in json.dumps(doc) and "Jet_pt" in json.dumps(doc)


def test_precompute_and_batches_equal_in_ram_data(root_file, tmp_path):
    path, cols = root_file
    (tmp_path / "spec.toml").write_text(SPEC)
    spec = BatchSpec.from_toml(tmp_path / "spec.toml")
    out = tmp_path / "batches.zarr"
    assert main(["precompute", "--data", str(path), "--spec", str(tmp_path / "spec.toml"),
                 "--batch-size", "128", "--seed", "3", "--out", str(out), "-q"]) == 0
    live_root = Batches(lstm_data.open(path), spec, Order(batch_size=128, seed=3))
    live_ram = Batches(_in_ram(cols), spec, Order(batch_size=128, seed=3))
    stored = open_batches(out, order=Order(batch_size=128, seed=3), spec=spec)
    assert len(stored) == len(live_ram) == len(live_root) == 6
    for i in range(len(live_ram)):
        assert_same_batch(live_root[i], live_ram[i])
        assert_same_batch(stored[i], live_ram[i])


def test_a_tree_is_named_after_the_file_on_the_command_line(tmp_path, capsys):
    from lstm_data.errors import FormatError, SchemaError

    cols = root_events(120, seed=4)
    runs = {"run": np.arange(3), "lumi": np.arange(3) * 2.0}
    paths = [write_root(tmp_path / f"nano{k}.root", {"Events": cols, "Runs": runs}) for k in range(2)]
    with pytest.raises(SchemaError, match=r"or as .*nano0.root:Events on the command line"):
        lstm_data.open(paths[0])
    ref = lstm_data.open(paths[0], tree="Events")
    assert_same_dataset(lstm_data.open(f"{paths[0]}:Events"), ref)
    assert len(lstm_data.open(f"{paths[0]}:Runs")) == 3
    both = lstm_data.open(str(tmp_path / "nano*.root:Events"))  # a pattern of them
    assert len(both) == 240
    capsys.readouterr()
    assert main(["inspect", f"{paths[1]}:Runs", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == 3
    out = tmp_path / "events.zarr"
    assert main(["convert", str(tmp_path / "nano*.root:Events"), str(out), "--quiet"]) == 0
    assert len(lstm_data.open(out)) == 240
    assert_same_dataset(lstm_data.open(out).take(np.arange(120)), ref)
    with pytest.raises(SchemaError, match="no TTree 'Lumi'"):
        lstm_data.open(f"{paths[0]}:Lumi")
    with pytest.raises(SchemaError, match="tree='Runs' given .* which names tree 'Events'"):
        lstm_data.open(f"{paths[0]}:Events", tree="Runs")
    (tmp_path / "t.csv").write_text("a,b\n1,2\n")
    with pytest.raises(FileNotFoundError, match=r"t.csv:x"):
        lstm_data.open(f"{tmp_path / 't.csv'}:x")  # only a .root path names a tree
    (tmp_path / "fake.root").write_text("a,b\n1,2\n")
    with pytest.raises(FormatError, match="ROOT extension"):
        lstm_data.open(f"{tmp_path / 'fake.root'}:Events")
    weird = tmp_path / "odd:name.csv"  # a real file with a colon opens as itself
    weird.write_text("a,b\n1,2\n")
    assert len(lstm_data.open(weird)) == 1


def test_inspect_lists_skipped_branches_with_their_types(tmp_path, capsys):
    import uproot

    path = tmp_path / "labels.root"
    with uproot.recreate(path) as fh:
        fh.mktree("Events", {"x": np.float32, "label": "string"})
        fh["Events"].extend({"x": np.arange(3, dtype=np.float32), "label": ["a", "b", "c"]})
    capsys.readouterr()
    assert main(["inspect", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["rows"] == 3 and doc["skipped"] == {"label": "char*: text, not numbers"}
    assert main(["inspect", str(path), "--no-stats"]) == 0
    text = capsys.readouterr().out
    assert "skipped (1, not numbers):" in text and "label: char*: text, not numbers" in text
