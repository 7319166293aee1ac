"""ROOT trees and RNTuples read on demand by cluster (in_ram=False): equal to the whole read, each
cluster decoded at most twice per block-shuffled epoch, every row once, memory bounded."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

uproot = pytest.importorskip("uproot")
ak = pytest.importorskip("awkward")

import lstm_data  # noqa: E402
from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars  # noqa: E402
from lstm_data.data.concat import ConcatDataset  # noqa: E402
from lstm_data.io.root import RootDataset, read_root  # noqa: E402
from tests.helpers import assert_same_batch, assert_same_dataset, root_events  # noqa: E402


def _write(path, cols, parts, start=0):
    """A TTree extended in ``parts`` pieces: one cluster per piece; ``row`` numbers the entries."""
    n = len(next(iter(cols.values())))
    cols = dict(cols, row=np.arange(start, start + n, dtype=np.int64))
    with uproot.recreate(path) as fh:
        types = {k: v.type.content if isinstance(v, ak.Array) else np.dtype((v.dtype, v.shape[1:]))
                 for k, v in cols.items()}
        tree = fh.mktree("Events", types)
        cuts = np.linspace(0, n, parts + 1).astype(int)
        for a, b in zip(cuts[:-1], cuts[1:]):
            tree.extend({k: v[a:b] for k, v in cols.items()})
    return path


def _spec():
    return BatchSpec(inputs={"flat": Scalars(["MET_pt", "weight", "run"]),
                             "mu": Ragged(["Muon_pt", "Muon_eta", "Muon_charge"], max_len=3),
                             "jet": Ragged(["Jet_e", "Jet_pt"], max_len=4)},
                     targets={"row": Scalars(["row"])})


def test_read_on_demand_equals_the_whole_read(tmp_path):
    path = _write(tmp_path / "a.root", root_events(3000, seed=1), parts=9)
    whole = read_root(path, in_ram=True)
    lazy = read_root(path, in_ram=False, block_bytes=20_000)
    assert isinstance(lazy, RootDataset) and not lazy.in_ram and lazy.n_chunks > 3
    rows = np.random.default_rng(0).integers(0, len(whole), 700)
    assert_same_dataset(lazy.take(rows), whole.take(rows))
    assert_same_dataset(lazy.load(), whole)
    for g in whole.groups:
        assert np.array_equal(lazy.offsets(g), whole.offsets(g))
        for got, want in zip(lazy.ragged(g, rows[:50]), whole.ragged(g, rows[:50])):
            assert got.tobytes() == want.tobytes()
    assert lazy.scalar("event", rows).tobytes() == whole.scalar("event", rows).tobytes()
    starts = lazy.value_chunk_starts("Muon")
    assert starts[0] == 0 and set(starts.tolist()) <= set(np.arange(0, 3001, 3000 // 9 + 1).tolist() +
                                                          np.linspace(0, 3000, 10).astype(int).tolist())


def test_open_in_ram_false_and_pickle(tmp_path):
    import pickle

    path = _write(tmp_path / "a.root", root_events(500, seed=2), parts=4)
    lazy = lstm_data.open(path, in_ram=False, columns=["Muon_*", "row"], cache_chunks=1)
    assert isinstance(lazy, RootDataset) and lazy.scalar_names == ["row"] and list(lazy.groups) == ["Muon"]
    again = pickle.loads(pickle.dumps(lazy))
    assert_same_dataset(again.load(), read_root(path, columns=["Muon_*", "row"]))


def _epoch_rows(batches, epoch):
    rows = []
    for i in range(len(batches)):
        rows.append(batches.batch(i, epoch)[1]["row"].ravel().astype(np.int64))
    return np.concatenate(rows)


def test_block_shuffle_over_files_and_clusters_reads_each_cluster_at_most_twice(tmp_path):
    paths = [_write(tmp_path / f"f{i}.root", root_events(2000, seed=10 + i), parts=8, start=2000 * i)
             for i in range(3)]
    lazy = lstm_data.open([str(p) for p in paths], in_ram=False, block_bytes=30_000)
    whole = lstm_data.open([str(p) for p in paths], in_ram=True)
    assert isinstance(lazy, ConcatDataset) and not lazy.in_ram
    for part in lazy.datasets:
        part.io_stats.track_chunks()
    b = Batches(lazy, _spec(), Order(batch_size=128, shuffle="block", seed=5, read_ahead=False))
    assert b.shuffle == "block"
    for epoch in range(2):
        for part in lazy.datasets:
            part.io_stats.reset()
        seen = _epoch_rows(b, epoch)
        assert np.array_equal(np.sort(seen), np.arange(6000))  # every row once
        for part in lazy.datasets:
            per = part.io_stats.per_chunk
            assert {k for (_, k) in per} <= set(range(part.n_chunks))
            assert max(per.values()) <= 2, per
            if epoch == 0:  # (a later epoch may find a window's rows still at hand)
                assert {k for (_, k) in per} == set(range(part.n_chunks))
    # the batches equal the in-RAM reader's batches of the same rows, bitwise
    ref_spec = _spec()
    for i in (0, len(b) // 2, len(b) - 1):
        got = b[i]
        rows = got[1]["row"].ravel().astype(np.intp)
        ref = Batches(whole.take(rows), ref_spec, Order(batch_size=len(rows), shuffle=False))[0]
        assert_same_batch(got, ref)


def test_rntuple_read_by_cluster_equals_uproot(tmp_path):
    path = tmp_path / "rn.root"
    rng = np.random.default_rng(3)
    pieces = []
    with uproot.recreate(path) as fh:
        for k in range(6):
            n = 400
            mu = rng.integers(0, 4, n)
            piece = ak.Array({"x": rng.normal(size=n), "id": np.arange(k * n, (k + 1) * n),
                              "Muon": ak.zip({"pt": ak.unflatten(rng.random(mu.sum()).astype(np.float32), mu),
                                              "eta": ak.unflatten(rng.normal(size=mu.sum()), mu)})})
            pieces.append(piece)
            if k == 0:
                fh.mkrntuple("Events", piece)
            fh["Events"].extend(piece)
    with uproot.open(path) as fh:
        ref = fh["Events"].arrays()
        assert len(fh["Events"].cluster_summaries) >= 6
    lazy = read_root(path, in_ram=False, block_bytes=8_000)
    whole = read_root(path, in_ram=True)  # in one range
    ranges = read_root(path, in_ram=True, block_bytes=8_000)  # in RAM, cluster range by cluster range
    assert isinstance(lazy, RootDataset) and lazy.n_chunks >= 3
    assert_same_dataset(lazy.load(), whole)
    assert_same_dataset(ranges, whole)
    assert whole.scalar("x").tobytes() == ak.to_numpy(ref["x"]).tobytes()
    assert lazy.scalar("x").tobytes() == ak.to_numpy(ref["x"]).tobytes()
    values, offsets = lazy.ragged("Muon", np.arange(len(ref)))
    assert np.array_equal(np.diff(offsets), ak.num(ref["Muon"]).to_numpy())
    col = lazy.groups["Muon"].index("Muon_pt")
    assert values[:, col].tobytes() == ak.to_numpy(ak.flatten(ref["Muon"].pt)).astype(values.dtype).tobytes()
    lazy.io_stats.track_chunks()
    rows = np.random.default_rng(1).permutation(len(lazy))[:900]
    assert_same_dataset(lazy.take(rows), whole.take(rows))
    assert max(lazy.io_stats.per_chunk.values()) == 1  # one take: each chunk decoded once


_RSS = r"""
import resource, sys, time
import numpy as np
import lstm_data, uproot, awkward
from lstm_data import Batches, BatchSpec, Ragged, Scalars
paths, cap = sys.argv[2:], int(sys.argv[1])
def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
spec = BatchSpec(inputs={"p": Ragged([f"P_v{i}" for i in range(8)], max_len=64), "s": Scalars(["jet_pt"])},
                 targets={"row": Scalars(["row"])})
Batches(lstm_data.open(paths[0], in_ram=True, columns=["jet_pt", "row"]),
        BatchSpec(inputs={"s": Scalars(["jet_pt"])}), lstm_data.Order(batch_size=8))[0]
base = status("VmRSS")
with open("/proc/self/clear_refs", "w") as fh:  # the peak (VmHWM) restarts from the current RSS
    fh.write("5")
d = lstm_data.open(paths, in_ram=False, block_bytes=1 << 20, threads=1)
b = Batches(d, spec, lstm_data.Order(batch_size=256, shuffle="block", seed=1))
seen = np.concatenate([b[i][1]["row"].ravel() for i in range(len(b))]).astype(np.int64)
n = len(d)
print("ROWS_OK" if np.array_equal(np.sort(seen), np.arange(n)) else "ROWS_BAD", n)
print("PEAK", status("VmHWM") - base, "BASE", base, "CAP", cap)
"""


@pytest.mark.slow
def test_values_three_times_a_memory_cap_give_every_row_once_under_the_cap(tmp_path):
    """~400 MB of decoded values in 4 files (clusters of 1000 entries); a fresh process reads a
    block-shuffled epoch with a peak RSS above its own baseline (after the imports and a first small
    batch) of under a third of that."""
    if not os.access("/proc/self/clear_refs", os.W_OK):
        pytest.skip("needs /proc/self/clear_refs to restart the peak RSS (Linux)")
    rng = np.random.default_rng(0)
    paths, start, total = [], 0, 0
    for f in range(4):
        n = 80_000
        k = rng.integers(20, 60, n)
        pt = rng.random(n).astype(np.float32)
        P = ak.zip({f"v{i}": ak.unflatten(rng.random(int(k.sum()), dtype=np.float32), k) for i in range(8)})
        path = tmp_path / f"jets{f}.root"
        with uproot.recreate(path, compression=None) as fh:
            tree = fh.mktree("Events", {"jet_pt": np.float32, "row": np.int64, "P": P.type.content})
            for a in range(0, n, 1000):
                tree.extend({"jet_pt": pt[a:a + 1000], "row": np.arange(start + a, start + min(n, a + 1000)),
                             "P": P[a:a + 1000]})
        total += int(k.sum()) * 8 * 4
        paths.append(str(path))
        start += n
    assert total > 390e6
    cap = total // 3
    res = subprocess.run([sys.executable, "-c", _RSS, str(cap), *paths], capture_output=True, text=True,
                         timeout=600)
    assert "ROWS_OK" in res.stdout, res.stdout + res.stderr[-3000:]
    peak = int(res.stdout.split("PEAK")[1].split()[0])
    assert peak < cap, res.stdout


def test_a_tree_without_entries_reads_on_demand_as_whole(tmp_path):
    path = tmp_path / "empty.root"
    with uproot.recreate(path) as fh:
        fh.mktree("Events", {"x": np.float32, "J_a": "var * float32", "J_b": "var * float32"})
    lazy = read_root(path, in_ram=False)
    assert len(lazy) == 0 and lazy.n_chunks == 0
    assert_same_dataset(lazy.load(), read_root(path, in_ram=True))


_MANY = r"""
import resource, sys
from lstm_data.io.root.memory import _proc_kib
import awkward, uproot, lstm_data, lstm_data.io.root
resource.setrlimit(resource.RLIMIT_DATA, (_proc_kib("self/status", "VmData") + int(sys.argv[1]), resource.RLIM_INFINITY))
one = lstm_data.open(sys.argv[2], threads=1)
many = lstm_data.open(sys.argv[2:], threads=1, block_bytes=1 << 20)
print(type(one).__name__, [type(d).__name__ for d in many.datasets])
"""


def test_many_files_that_fit_one_by_one_but_not_together_are_read_on_demand(tmp_path):
    rng = np.random.default_rng(0)
    paths = []
    for i in range(4):
        k = rng.integers(0, 400, 5000)
        cols = {"J_a": ak.unflatten(rng.random(int(k.sum()), dtype=np.float32), k), "x": rng.random(5000)}
        paths.append(str(_write(tmp_path / f"m{i}.root", cols, parts=10)))  # ~4 MB of values each
    res = subprocess.run([sys.executable, "-c", _MANY, str(24 << 20), *paths], capture_output=True, text=True)
    assert res.stdout.strip() == "InMemoryDataset " + str(["RootDataset"] * 4), res.stdout + res.stderr[-2000:]


_DATA = {}


def _digest(seed):
    d = _DATA["lazy"]
    rows = np.random.default_rng(seed).permutation(len(d))
    taken = d.take(rows)
    return [taken.ragged(g)[0].tobytes() for g in taken.groups] + [taken.scalar(s).tobytes()
                                                                   for s in taken.scalar_names], rows


def test_forked_workers_read_through_their_own_file_handle(tmp_path):
    """Fixed-size array branches (uproot's path, through the file handle): forked children read at once."""
    import multiprocessing

    cols = root_events(6000, seed=7)
    cols["pos"] = np.random.default_rng(2).random((6000, 3))  # float pos[3]: read through uproot
    path = _write(tmp_path / "v.root", cols, parts=12)
    whole = read_root(path, in_ram=True)
    lazy = _DATA["lazy"] = read_root(path, in_ram=False, block_bytes=10_000, threads=1)
    lazy.take(np.arange(10))  # the parent has used its handle
    with multiprocessing.get_context("fork").Pool(3) as pool:
        for values, rows in pool.map(_digest, range(6)):
            want = whole.take(rows)
            assert values == [want.ragged(g)[0].tobytes() for g in want.groups] + [
                want.scalar(s).tobytes() for s in want.scalar_names]


def test_a_whole_scalar_column_reads_its_branch_alone(tmp_path):
    path = _write(tmp_path / "a.root", root_events(3000, seed=1), parts=6)
    lazy = read_root(path, in_ram=False, block_bytes=20_000)
    whole = read_root(path, in_ram=True)
    at_open = lazy.io_stats.chunks_read  # (the Jet lengths, read once at open)
    for s in ("MET_pt", "event", "passed"):
        assert lazy.scalar(s).tobytes() == whole.scalar(s).tobytes() and lazy.scalar(s).dtype == whole.scalar(s).dtype
    assert lazy.io_stats.chunks_read == at_open  # no chunk of every column decoded for it


def test_unequal_lengths_in_a_declared_group_name_the_tree_entry(tmp_path):
    from lstm_data import SchemaError

    rng = np.random.default_rng(3)
    k = rng.integers(1, 4, 3000)
    other = k.copy()
    other[2345] += 1  # in the 8th of 10 clusters
    cols = {"J_a": ak.unflatten(rng.random(int(k.sum()), dtype=np.float32), k),
            "J_b": ak.unflatten(rng.random(int(other.sum()), dtype=np.float32), other)}
    path = _write(tmp_path / "bad.root", cols, parts=10)
    for in_ram in (True, False):
        with pytest.raises(SchemaError) as err:
            read_root(path, schema={"J": ["J_a", "J_b"]}, in_ram=in_ram, block_bytes=5_000).load()
        assert err.value.row == 2345, (in_ram, err.value)


def test_pickled_dataset_keeps_its_chunks_and_offsets(tmp_path):
    """A worker gets the chunks and offsets found at open: it reads no group again to find lengths."""
    import pickle

    path = _write(tmp_path / "a.root", root_events(3000, seed=1), parts=6)
    lazy = read_root(path, in_ram=False, block_bytes=20_000)  # Jet_e/Jet_pt: lengths read at open
    assert lazy.io_stats.chunks_read == lazy.n_chunks
    again = pickle.loads(pickle.dumps(lazy))
    assert again.io_stats.chunks_read == 0 and np.array_equal(again.chunk_bounds, lazy.chunk_bounds)
    assert_same_dataset(again.load(), read_root(path, in_ram=True))


def test_a_tree_of_scalars_only_is_block_shuffled_by_its_clusters(tmp_path):
    """No ragged group to take chunk bounds from: the rows where chunks start still cut the blocks,
    so each cluster is decoded at most twice per epoch."""
    rng = np.random.default_rng(3)
    paths = [_write(tmp_path / f"s{i}.root", {"MET_pt": rng.random(3000).astype(np.float32),
                                              "weight": rng.random(3000)}, parts=10, start=3000 * i)
             for i in range(2)]
    lazy = lstm_data.open([str(p) for p in paths], in_ram=False, block_bytes=10_000)
    assert not lazy.groups and len(lazy.row_chunk_starts()) > 2
    for part in lazy.datasets:
        part.io_stats.track_chunks()
    b = Batches(lazy, BatchSpec(inputs={"flat": Scalars(["MET_pt", "weight"])}, targets={"row": Scalars(["row"])}),
                Order(batch_size=100, shuffle="block", seed=2, read_ahead=False))
    assert np.array_equal(np.sort(_epoch_rows(b, 0)), np.arange(6000))
    for part in lazy.datasets:
        assert max(part.io_stats.per_chunk.values()) <= 2, part.io_stats.per_chunk
