"""precompute: the zarr batch store, its reuse check, open_batches and the CLI."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import lstm_data
from lstm_data import Batches, BatchSpec, Order, open_batches
from lstm_data.cli import main
from lstm_data.data.synthetic import make_dataset
from lstm_data.store.format import StoreMismatchError
from lstm_data.store.write import precompute
from tests.helpers import EXAMPLES, assert_same_batch


@pytest.fixture(scope="module")
def spec():
    return BatchSpec.from_toml(EXAMPLES / "numu_v3.toml")


DS_ROWS, DS_SEED = 2500, 5  # the ``ds`` fixture (tests/conftest.py)


@pytest.mark.parametrize("workers", [1, 2])
def test_store_holds_exactly_the_epoch_batches(tmp_path, ds, spec, workers):
    fixed = BatchSpec.from_lstm_ee({"vars_input_png2d": spec.inputs["input_png2d"].vars,
                                    "var_target_total": "trueE"})  # per-batch prong width
    for s in (spec, fixed):
        out = tmp_path / f"b{workers}.zarr"
        summary = precompute(ds, s, out, Order(batch_size=300, seed=4), threads=workers, progress=False,
                             overwrite=True)
        assert summary.n_batches == 9 and summary.n_rows == 2500 and not summary.reused
        stored = open_batches(out, order=Order(batch_size=300, seed=4), spec=s, dataset=ds)
        live = Batches(ds, s, Order(batch_size=300, seed=4))
        assert len(stored) == len(live)
        for i in range(len(live)):
            assert_same_batch(live[i], stored[i])
    assert not list(tmp_path.glob(".*tmp*"))  # the temp store was renamed away


def test_reuse_when_equal_and_clear_error_when_not(tmp_path, ds, spec):
    out = tmp_path / "b.zarr"
    precompute(ds, spec, out, Order(batch_size=500, seed=1), progress=False)
    again = precompute(ds, spec, out, Order(batch_size=500, seed=1), progress=False)
    assert again.reused
    with pytest.raises(StoreMismatchError, match="batch_size: store has 500, asked for 256"):
        precompute(ds, spec, out, Order(batch_size=256, seed=1), progress=False)
    with pytest.raises(StoreMismatchError, match="seed: store has 1, asked for 2"):
        open_batches(out, order=Order(seed=2))
    other = make_dataset(2500, seed=6)
    with pytest.raises(StoreMismatchError, match="fingerprint"):
        open_batches(out, dataset=other)
    with pytest.raises(StoreMismatchError, match="spec: input 'input_png2d' only in the store"):
        open_batches(out, spec=BatchSpec.from_lstm_ee({"var_target_total": "trueE"}))
    shorter = BatchSpec.from_dict(spec.to_dict())
    png3d = spec.inputs["input_png3d"]
    shorter.inputs["input_png3d"] = lstm_data.Ragged(png3d.vars, max_len=3, sort_by=png3d.sort_by, lengths=True)
    with pytest.raises(StoreMismatchError, match="spec: input 'input_png3d' differs in max_len"):
        open_batches(out, spec=shorter)
    precompute(other, spec, out, Order(batch_size=500, seed=1), progress=False, overwrite=True)
    open_batches(out, dataset=other)


def test_precomputed_batches_epochs_and_pickle(tmp_path, ds, spec):
    out = tmp_path / "b.zarr"
    precompute(ds, spec, out, Order(batch_size=250, seed=3), progress=False)
    stored = open_batches(out)
    e0 = [stored[i][1]["target_total"][0, 0] for i in range(len(stored))]
    stored.on_epoch_end()
    e1 = [stored[i][1]["target_total"][0, 0] for i in range(len(stored))]
    assert sorted(e0) == sorted(e1) and e0 != e1
    blob = pickle.dumps(stored)
    assert len(blob) < 2000
    back = pickle.loads(blob)
    assert_same_batch(back[3], stored[3])
    assert sum(1 for _ in stored.iter(threads=2)) == len(stored)


def test_adapters_accept_a_store(tmp_path, ds, spec):
    torch = pytest.importorskip("torch")
    from lstm_data.adapters.torch import TorchBatches
    out = tmp_path / "b.zarr"
    precompute(ds, spec, out, Order(batch_size=500, seed=3), progress=False)
    x, y, w = TorchBatches(open_batches(out))[2]
    assert x["input_png3d"].dtype == torch.float32 and x["input_png3d"].shape == (500, 10, 33)
    assert w["target_primary"].shape == (500,)


def test_cli_writes_store_and_prints_summary(tmp_path, ds, capsys):
    data = tmp_path / "d.zarr"
    ds.to_zarr(data)
    out = tmp_path / "b.zarr"
    def argv(seed):
        return ["precompute", "--data", str(data), "--spec", str(EXAMPLES / "numu_v3.toml"),
                "--batch-size", "1000", "--seed", str(seed), "--out", str(out), "--threads", "2",
                "--no-progress"]
    assert main(argv(7)) == 0
    text = capsys.readouterr().out
    assert "input_png3d" in text and "(B, 10, 33)" in text and "float32" in text
    assert "3 batches, 2500 rows" in text and "rows/s" in text
    assert main(argv(7)) == 0 and "reused" in capsys.readouterr().out
    assert main(argv(8)) == 1
    assert "refusing to reuse" in capsys.readouterr().err


def test_cli_on_the_shipped_example(tmp_path, capsys):
    out = tmp_path / "numu.zarr"
    assert main(["precompute", "--data", str(EXAMPLES / "numu_v3.csv.xz"), "--spec",
                 str(EXAMPLES / "numu_v3.toml"), "--batch-size", "256", "--seed", "1",
                 "--out", str(out), "--no-progress"]) == 0
    assert "input_png2d" in capsys.readouterr().out
    stored = open_batches(out)
    assert stored.n_rows == 5000 and len(stored) == -(-5000 // 256)


def test_fingerprint_sees_any_single_value_and_not_the_format(tmp_path, monkeypatch):
    from lstm_data.store import format as batch_store
    from lstm_data.store.format import fingerprint

    monkeypatch.setattr(batch_store, "_HASH_ROWS", 1000)  # on-disk values hashed in 9 reads
    ds = make_dataset(9000, seed=7)  # more rows than any sample of a few thousand
    base = fingerprint(ds)
    ds.to_zarr(tmp_path / "same.zarr")
    assert fingerprint(lstm_data.open(tmp_path / "same.zarr")) == base  # same content, other reader
    for group in ds.groups:
        edited = ds.take(np.arange(len(ds)))
        values, offsets = edited.ragged(group)
        last = int(offsets[4501]) - 1  # the last value of row 4500
        assert last >= int(offsets[4500])
        values[last, -1] += 1.0
        assert fingerprint(edited) != base, group
        edited.to_zarr(tmp_path / f"{group}.zarr")
        assert fingerprint(lstm_data.open(tmp_path / f"{group}.zarr")) == fingerprint(edited)


@pytest.mark.parametrize("rows", [0, 5])
def test_precompute_of_a_group_without_values(tmp_path, ds, spec, rows):
    # no rows at all, or rows none of which has a prong of some group
    part = ds.take(np.arange(rows))
    if rows:
        values, offsets = part.ragged("png2d")
        from lstm_data.data.dataset import InMemoryDataset
        from lstm_data.data.ragged import RaggedGroup

        groups = {g: RaggedGroup(part.groups[g], *part.ragged(g)) for g in part.groups}
        groups["png2d"] = RaggedGroup(part.groups["png2d"], values[:0], np.zeros_like(offsets))
        part = InMemoryDataset({s: part.scalar(s) for s in part.scalar_names}, groups)
    summary = precompute(part, spec, tmp_path / "o.zarr", Order(batch_size=4, seed=1), progress=False)
    assert summary.n_rows == rows
    stored = open_batches(tmp_path / "o.zarr", order=Order(batch_size=4, seed=1), spec=spec, dataset=part)
    live = Batches(part, spec, Order(batch_size=4, seed=1))
    assert len(stored) == len(live)
    for i in range(len(live)):
        assert_same_batch(live[i], stored[i])


def test_precompute_never_replaces_its_input_or_an_unrelated_directory(tmp_path, ds, spec):
    from lstm_data.errors import FormatError

    data = tmp_path / "events.zarr"
    ds.to_zarr(data)
    for out in (data, data / "inner.zarr", tmp_path):  # the input, inside it, holding it
        with pytest.raises(ValueError, match="would overwrite the input data"):
            precompute(lstm_data.open(data), spec, out, Order(batch_size=500), progress=False, overwrite=True)
    assert len(lstm_data.open(data)) == len(ds)  # still the dataset
    assert main(["precompute", "--data", str(data), "--spec", str(EXAMPLES / "numu_v3.toml"),
                 "--out", str(data), "--overwrite", "--no-progress"]) != 0
    assert len(lstm_data.open(data)) == len(ds)

    unrelated = tmp_path / "results"
    unrelated.mkdir()
    (unrelated / "keep.txt").write_text("precious")
    with pytest.raises(FileExistsError, match="not a precomputed batch store"):
        precompute(ds, spec, unrelated, Order(batch_size=500), progress=False, overwrite=True)
    assert (unrelated / "keep.txt").read_text() == "precious"
    with pytest.raises(FormatError, match="not a precomputed batch store"):
        open_batches(unrelated / "keep.txt")


def test_a_store_of_inputs_only_reads_back(tmp_path):
    from lstm_data import Batches, BatchSpec, Order, Ragged, open_batches
    from lstm_data.data.synthetic import make_dataset
    from lstm_data.store.write import precompute

    data = make_dataset(300, seed=2)
    spec = BatchSpec(inputs={"png": Ragged(["png.calE"], max_len=4)})
    order = Order(batch_size=100, seed=1)
    precompute(data, spec, tmp_path / "in.zarr", order, progress=False)
    stored, live = open_batches(tmp_path / "in.zarr", permute=False)[0], Batches(data, spec, order)[0]
    assert stored[1] == {} and stored[2] == live[2] == {}
    assert stored[0]["png"].tobytes() == live[0]["png"].tobytes()
