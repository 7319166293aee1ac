"""lstm_data.predict: every selected row scored once, in input order, written beside the inputs."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import lstm_data
from lstm_data import PredictOptions
from lstm_data.data.synthetic import make_dataset

torch = pytest.importorskip("torch")

SPEC = lstm_data.BatchSpec(
    inputs={"x": lstm_data.Scalars(["calE", "nHit"]),
            "p": lstm_data.Ragged(["png.calE", "png.len"], max_len=4, empty="drop")},
    targets={"t": lstm_data.Scalars(["trueE", "trueLepE"])}, selection="calE > 0.3")


class Net(torch.nn.Module):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.a = torch.nn.Linear(2, 2)
        self.b = torch.nn.Linear(2, 2)

    def forward(self, x: "torch.Tensor", p: "torch.Tensor") -> "torch.Tensor":
        return torch.softmax(self.a(x) + self.b(p).sum(dim=1), dim=1)


def _files(tmp_path: Path, n: tuple[int, ...] = (70, 0, 45, 90)) -> list[str]:
    paths = []
    for i, rows in enumerate(n):
        path = tmp_path / f"in{i}.parquet"
        make_dataset(rows, seed=i).to_parquet(path)
        paths.append(str(path))
    return paths


def _expected(paths: list[str], batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores of the same model on the training batches (no shuffle), and their stored rows."""
    ds = lstm_data.open(paths)
    batches = lstm_data.Batches(ds, SPEC, lstm_data.Order(batch_size=batch_size, shuffle=False))
    net = Net().eval()
    scores = []
    with torch.inference_mode():
        for i in range(len(batches)):
            inputs = batches[i][0]
            scores.append(net(torch.from_numpy(inputs["x"]), torch.from_numpy(inputs["p"])).numpy())
    calE = ds.scalar("calE")
    lens = np.diff(ds.offsets("png"))
    kept = np.flatnonzero((calE > 0.3) & (lens > 0))
    return np.concatenate(scores), kept


def test_every_selected_row_once_in_input_order_bitwise(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    paths = _files(tmp_path)
    written = lstm_data.predict(Net(), paths, SPEC, tmp_path / "out", observers=["calE", "nHit"],
                                options=PredictOptions(batch_size=16, flush_every=2))
    assert [p.name for p in written] == [f"in{i}.scores.parquet" for i in range(4)]
    tables = [pq.read_table(p) for p in written]
    got = {n: np.concatenate([t.column(n).to_numpy() for t in tables]) for n in tables[0].column_names}
    want, kept = _expected(paths, 16)
    bounds = np.array([0, 70, 70, 115, 205])
    assert np.array_equal(got["file_index"], np.searchsorted(bounds, kept, side="right") - 1)
    assert np.array_equal(got["entry"], kept - bounds[got["file_index"]])  # every row once, in order
    assert np.array_equal(got["score_trueE"].view(np.uint32), want[:, 0].view(np.uint32))
    assert np.array_equal(got["score_trueLepE"].view(np.uint32), want[:, 1].view(np.uint32))
    base = lstm_data.open(paths)
    assert np.array_equal(got["calE"].view(np.uint32), base.scalar("calE")[kept].view(np.uint32))
    assert tables[1].num_rows == 0 and not (tmp_path / "out" / ".lstm_data-predict-0-of-1.work").exists()


def test_marked_rows_keep_every_entry_and_the_input_row_groups(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = tmp_path / "in.parquet"
    table = make_dataset(100, seed=3).to_arrow()
    pq.write_table(table, src, row_group_size=30)
    out = lstm_data.predict(Net(), str(src), SPEC, options=PredictOptions(batch_size=7, selected="mark"))
    assert out == [tmp_path / "in.scores.parquet"]
    meta = pq.ParquetFile(out[0]).metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [30, 30, 30, 10]
    got = pq.read_table(out[0])
    assert np.array_equal(got.column("entry").to_numpy(), np.arange(100))
    want, kept = _expected([str(src)], 7)
    selected = got.column("selected").to_numpy()
    assert np.array_equal(np.flatnonzero(selected), kept)
    score = got.column("score_trueE").to_numpy()
    assert np.isnan(score[~selected]).all()
    assert np.array_equal(score[selected].view(np.uint32), want[:, 0].view(np.uint32))
    assert isinstance(table, pa.Table)


def test_root_friend_tree_joins_the_input_tree(tmp_path: Path) -> None:
    import awkward as ak
    import uproot

    n = 120
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 4, n)
    src = tmp_path / "events.root"
    with uproot.recreate(src) as fh:
        tree = fh.mktree("Events", {"met": np.float32, "Jet_pt": "var * float32"})
        tree.extend({"met": rng.exponential(30, n).astype(np.float32),
                     "Jet_pt": ak.unflatten(rng.exponential(40, counts.sum()).astype(np.float32), counts)})
    spec = lstm_data.BatchSpec(inputs={"x": lstm_data.Scalars(["met"]),
                                       "j": lstm_data.Ragged(["Jet_pt"], max_len=3)})

    def model(inputs: dict[str, np.ndarray]) -> np.ndarray:
        return inputs["x"][:, 0] + inputs["j"].sum(axis=(1, 2))
    out = lstm_data.predict(model, str(src), spec, tmp_path / "scores",
                            options=PredictOptions(batch_size=32, output_format="same"), observers=["met"])
    with uproot.open(out[0]) as friend, uproot.open(src) as main:
        assert out[0].suffix == ".root"
        scores = friend["Events"].arrays(library="np")
        events = main["Events"].arrays(["met", "Jet_pt"], library="ak")
    assert np.array_equal(scores["entry"], np.arange(n))  # one friend entry per input entry
    pt = ak.to_numpy(ak.fill_none(ak.pad_none(events["Jet_pt"], 3, clip=True), 0.0)).sum(axis=1)
    assert np.array_equal(scores["met"].view(np.uint32), ak.to_numpy(events["met"]).view(np.uint32))
    np.testing.assert_allclose(scores["score_0"], ak.to_numpy(events["met"]) + pt, rtol=1e-6)


def test_hdf5_csv_and_zarr_outputs(tmp_path: Path) -> None:
    import csv

    import h5py

    paths = _files(tmp_path, (40, 25))
    want, kept = _expected(paths, 8)
    for fmt, suffix in (("hdf5", ".h5"), ("csv", ".csv"), ("zarr", ".zarr")):
        out = lstm_data.predict(Net(), paths, SPEC, tmp_path / fmt,
                                options=PredictOptions(batch_size=8, output_format=fmt))
        assert [p.suffix for p in out] == [suffix, suffix]
        if fmt == "hdf5":
            cols = [{k: f[k][:] for k in f} for f in (h5py.File(p, "r") for p in out)]
        elif fmt == "csv":
            cols = []
            for p in out:
                with open(p) as fh:
                    rows = list(csv.DictReader(fh))
                cols.append({k: np.array([float(r[k]) for r in rows]) for k in rows[0]})
        else:
            cols = [{k: ds.scalar(k) for k in ds.scalar_names} for ds in (lstm_data.open(p) for p in out)]
        score = np.concatenate([c["score_trueE"] for c in cols]).astype(np.float32)
        entry = np.concatenate([c["entry"] for c in cols]).astype(np.int64)
        assert np.array_equal(score.view(np.uint32), want[:, 0].view(np.uint32)), fmt
        assert np.array_equal(entry, np.where(kept < 40, kept, kept - 40)), fmt


def test_refuses_to_overwrite_an_input_or_an_output(tmp_path: Path) -> None:
    paths = _files(tmp_path, (20,))
    other = tmp_path / "in0.scores.parquet"  # the output's name for in0.parquet
    make_dataset(10, seed=9).to_parquet(other)
    with pytest.raises(lstm_data.OptionError, match="would overwrite the input"):
        lstm_data.predict(Net(), [*paths, str(other)], SPEC)
    lstm_data.predict(Net(), paths, SPEC, tmp_path / "o")
    with pytest.raises(lstm_data.OptionError, match="exists"):
        lstm_data.predict(Net(), paths, SPEC, tmp_path / "o")
    with pytest.raises(lstm_data.SchemaError, match="did you mean 'calE'"):
        lstm_data.predict(Net(), paths, SPEC, tmp_path / "p", observers=["calEE"])


def test_options_round_trip_through_toml(tmp_path: Path) -> None:
    opts = PredictOptions(batch_size=64, output_format="root", selected="mark", flush_every=3)
    (tmp_path / "p.toml").write_text(opts.to_toml())
    assert PredictOptions.from_toml(tmp_path / "p.toml") == opts
    with pytest.raises(lstm_data.OptionError, match="did you mean 'selected'"):
        PredictOptions.from_dict({"selectd": "mark"})
    with pytest.raises(lstm_data.OptionError, match="selected must be one of"):
        PredictOptions(selected="keep")


def test_ranks_write_parts_that_open_as_one_dataset_in_input_order(tmp_path: Path) -> None:
    paths = _files(tmp_path)
    parts = []
    for rank in range(3):
        parts += lstm_data.predict(Net(), paths, SPEC, tmp_path / "parts",
                                   options=PredictOptions(batch_size=16, rank=rank, world_size=3))
    assert [p.name for p in parts] == [f"scores.part-{r:05d}-of-00003.parquet" for r in range(3)]
    whole = lstm_data.open([str(p) for p in sorted(parts)])
    want, kept = _expected(paths, 16)
    bounds = np.array([0, 70, 70, 115, 205])
    files = whole.scalar("file_index")
    assert np.array_equal(bounds[files] + whole.scalar("entry"), kept)
    assert np.array_equal(whole.scalar("score_trueE").view(np.uint32), want[:, 0].view(np.uint32))


_CHILD = textwrap.dedent("""
    import os, signal, sys, time
    import numpy as np
    sys.path.insert(0, {tests!r})
    import lstm_data
    from scoring.test_predict import Net, SPEC
    calls = 0
    net = Net().eval()
    def model(inputs):
        global calls
        calls += 1
        if calls == {kill_at}:
            os.kill(os.getpid(), signal.SIGKILL)
        import torch
        with torch.inference_mode():
            return net(torch.from_numpy(inputs["x"]), torch.from_numpy(inputs["p"]))
    lstm_data.predict(model, {paths!r}, SPEC, {out!r}, observers=["calE"],
                      options=lstm_data.PredictOptions(batch_size=8, flush_every=2, threads=2,
                                                       output_format="root"))
    print(calls)
""")


def _child(tmp_path: Path, paths: list[str], out: Path, kill_at: int) -> subprocess.CompletedProcess[str]:
    script = _CHILD.format(tests=str(Path(__file__).parents[1]), kill_at=kill_at, paths=paths, out=str(out))
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})


@pytest.mark.slow
def test_a_killed_run_resumes_and_writes_the_same_bits(tmp_path: Path) -> None:
    paths = _files(tmp_path, (70, 45))
    killed = _child(tmp_path, paths, tmp_path / "a", kill_at=7)
    assert killed.returncode == -signal.SIGKILL
    assert not list((tmp_path / "a").glob("*.root"))  # nothing in place: outputs are atomic
    assert len(list((tmp_path / "a").glob(".lstm_data-predict-0-of-1.work/chunk-*.npz"))) == 3
    resumed = _child(tmp_path, paths, tmp_path / "a", kill_at=-1)
    assert resumed.returncode == 0, resumed.stderr
    whole = _child(tmp_path, paths, tmp_path / "b", kill_at=-1)
    assert int(whole.stdout) - int(resumed.stdout) == 6  # the 3 chunks of 2 batches flushed before the kill
    for name in ("in0.scores.root", "in1.scores.root"):
        import uproot
        with uproot.open(tmp_path / "a" / name) as a, uproot.open(tmp_path / "b" / name) as b:
            got, want = a["scores"].arrays(library="np"), b["scores"].arrays(library="np")
        assert got.keys() == want.keys()
        for key in got:
            assert got[key].tobytes() == want[key].tobytes(), key
