"""``precompute(client=...)`` / ``--scheduler``: the same store, bitwise, built on Dask workers."""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from lstm_data import BatchSpec, Order, Ragged, Scalars, open_batches
from lstm_data.cli import main
from lstm_data.data.synthetic import PNG3D_VARS, SLICE_VARS, make_dataset
from lstm_data.io.ours.chunk_ranges import RangeWriter, write_shared_chunks
from lstm_data.io.ours.zarr import ZarrDataset
from lstm_data.scale.cluster import parse_scheduler
from lstm_data.store import ranges
from lstm_data.store.write import precompute
from tests.helpers import EXAMPLES


def _digest(store: Path) -> dict[str, str]:
    """Every file of a store -> its SHA-256 (the store's bytes, file by file)."""
    return {str(f.relative_to(store)): hashlib.sha256(f.read_bytes()).hexdigest()
            for f in sorted(store.rglob("*")) if f.is_file()}


def _spec() -> BatchSpec:
    return BatchSpec(inputs={"input_slice": Scalars(SLICE_VARS),
                             "input_png3d": Ragged(PNG3D_VARS[:6], max_len=10, lengths=True)},
                     targets={"target_total": Scalars(["trueE"])})


@pytest.fixture(scope="module")
def disk(tmp_path_factory):
    path = tmp_path_factory.mktemp("src") / "d.zarr"
    make_dataset(5000, seed=2).to_zarr(path, chunk_bytes=64 * 1024)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("options, multiple", [(dict(shuffle=True), None), (dict(shuffle="block"), None),
                                               (dict(shuffle=True, bucket_by="input_png3d"), 2)],
                         ids=["random", "block", "bucketed"])
def test_cluster_store_is_bitwise_the_one_process_store(client, disk, tmp_path, monkeypatch, options, multiple):
    # small chunks, so that runs of batches share chunks with their neighbours
    monkeypatch.setattr("lstm_data.store.write._CHUNK_BYTES", 8 * 1024)
    data = ZarrDataset(disk)
    spec, order = _spec().replace(pad_to_multiple_of=multiple), Order(batch_size=128, seed=4, **options)
    one = precompute(data, spec, tmp_path / "one.zarr", order, progress=False)
    many = precompute(data, spec, tmp_path / "many.zarr", order, progress=False, client=client)
    assert (one.n_batches, one.n_rows) == (many.n_batches, many.n_rows)
    assert _digest(tmp_path / "one.zarr") == _digest(tmp_path / "many.zarr")
    assert not list(tmp_path.glob(".*tmp*"))


@pytest.mark.slow
def test_in_ram_dataset_on_local_workers(client, tmp_path, monkeypatch):
    monkeypatch.setattr("lstm_data.store.write._CHUNK_BYTES", 4 * 1024)
    data = make_dataset(3000, seed=9)
    precompute(data, _spec(), tmp_path / "one.zarr", Order(batch_size=100, seed=1), progress=False)
    precompute(data, _spec(), tmp_path / "many.zarr", Order(batch_size=100, seed=1), progress=False, client=client)
    assert _digest(tmp_path / "one.zarr") == _digest(tmp_path / "many.zarr")


def test_range_writer_covers_every_split(tmp_path):
    """Runs of any sizes write every chunk once: the pieces they return complete the shared chunks."""
    import zarr

    rng = np.random.default_rng(0)
    sizes = rng.integers(0, 12, 24)  # empty rows too; one chunk per value at chunk=1
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    values = rng.normal(size=int(offsets[-1])).astype(np.float32)
    for chunk in (1, 7, 64, 10_000):
        for n_tasks in (1, 3, len(sizes)):
            root = zarr.open_group(str(tmp_path / f"s{chunk}-{n_tasks}.zarr"), mode="w", zarr_format=3)
            arr = root.create_array("v", shape=values.shape, chunks=(chunk,), dtype=np.float32, fill_value=-1)
            pieces = []
            for a, b in ranges.task_ranges(len(sizes), n_tasks):
                w = RangeWriter(arr, int(offsets[a]), int(offsets[b]), chunk)
                for i in range(a, b):
                    w.append(values[offsets[i]:offsets[i + 1]])
                pieces += w.close(int(offsets[b]))
            write_shared_chunks(arr, chunk, pieces)
            np.testing.assert_array_equal(arr[:], values)


@pytest.mark.slow
def test_a_failing_task_fails_the_precompute_and_leaves_nothing(client, disk, tmp_path):
    import shutil

    bad = tmp_path / "bad.zarr"
    shutil.copytree(disk, bad)
    data = ZarrDataset(bad)
    victim = sorted((bad / "png" / "values" / "c").iterdir())[-2]
    victim.unlink() if victim.is_file() else shutil.rmtree(victim)
    with pytest.raises(Exception, match="missing"):
        precompute(data, _spec(), tmp_path / "out.zarr", Order(batch_size=128, seed=4, shuffle=True),
                   progress=False, client=client)
    assert not (tmp_path / "out.zarr").exists()
    assert not list(tmp_path.glob(".*tmp*"))


@pytest.mark.slow
def test_cli_scheduler_local(tmp_path, capsys):
    base = ["precompute", "--data", str(EXAMPLES / "numu_v3.csv.xz"), "--spec", str(EXAMPLES / "numu_v3.toml"),
            "--batch-size", "256", "--no-progress"]
    assert main(base + ["--out", str(tmp_path / "one.zarr")]) == 0
    assert main(base + ["--out", str(tmp_path / "many.zarr"), "--scheduler", "local:2"]) == 0
    assert _digest(tmp_path / "one.zarr") == _digest(tmp_path / "many.zarr")
    assert open_batches(tmp_path / "many.zarr").n_rows > 0
    capsys.readouterr()
    assert main(base + ["--out", str(tmp_path / "x.zarr"), "--scheduler", "local:0"]) != 0
    assert "local:N with N >= 1" in capsys.readouterr().err


def test_parse_scheduler():
    assert parse_scheduler("local:3") == ("local", 3)
    assert parse_scheduler("tcp://10.0.0.1:8786") == ("address", None)
    for bad in ("local", "local:x", "local:0", " "):
        with pytest.raises(ValueError):
            parse_scheduler(bad)


class DiesOnce(ZarrDataset):
    """A zarr dataset whose first read in another process (a Dask worker) kills that process."""

    def __init__(self, path, marker, owner=None):
        import os

        super().__init__(path)
        self.marker, self.owner = str(marker), os.getpid() if owner is None else owner

    def __getstate__(self):
        return {"args": (self._reopen[0][0], self.marker, self.owner)}

    def __setstate__(self, state):
        self.__init__(*state["args"])

    def _ragged(self, group, rows):
        import os

        if os.getpid() != self.owner and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            os._exit(1)  # no exception, no cleanup: the worker process is gone
        return super()._ragged(group, rows)


@pytest.mark.slow
def test_a_worker_that_dies_fails_the_precompute_and_leaves_nothing(client, disk, tmp_path):
    """Dask would run the lost task again; the precompute fails instead (never exit 0 after a
    lost worker), and leaves no store and no temporary."""
    marker = tmp_path / "died"
    out = tmp_path / "many.zarr"
    with pytest.raises(ranges.WorkerLostError, match="a Dask worker died during precompute"):
        precompute(DiesOnce(disk, marker), _spec(), out, Order(batch_size=128, seed=4, shuffle=True),
                   progress=False, client=client)
    assert marker.exists()  # a worker did die
    assert sorted(p.name for p in tmp_path.iterdir()) == ["died"]
    # the cluster recovers: the next precompute is the one-process store
    ref = precompute(ZarrDataset(disk), _spec(), tmp_path / "one.zarr", Order(batch_size=128, seed=4, shuffle=True),
                     progress=False)
    again = precompute(ZarrDataset(disk), _spec(), out, Order(batch_size=128, seed=4, shuffle=True), progress=False,
                       client=client)
    assert ref.n_batches == again.n_batches
    assert _digest(tmp_path / "one.zarr") == _digest(out)
