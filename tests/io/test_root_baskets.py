"""The threaded basket path of the ROOT reader: bitwise equal to uproot, whatever the threads, codecs and
inflater; only the chosen branches are read; damage is located."""
from __future__ import annotations

import numpy as np
import pytest

import lstm_data
from lstm_data.errors import FormatError
from tests.helpers import assert_bitwise, assert_same_dataset, root_events

uproot = pytest.importorskip("uproot")
ak = pytest.importorskip("awkward")
from lstm_data.io.root import read_root  # noqa: E402
from lstm_data.io.root import baskets  # noqa: E402


def _write(path, cols, compression, parts=7):
    with uproot.recreate(path, compression=compression) as fh:
        types = {k: v.type.content if isinstance(v, ak.Array) else v.dtype for k, v in cols.items()}
        tree = fh.mktree("Events", types)
        n = len(next(iter(cols.values())))
        cuts = np.linspace(0, n, parts + 1).astype(int)
        for a, b in zip(cuts[:-1], cuts[1:]):
            tree.extend({k: v[a:b] for k, v in cols.items()})
    return path


def _columns(n=2000, seed=9):
    cols = root_events(n, seed)
    rng = np.random.default_rng(seed)
    k = ak.num(cols["Muon"]).to_numpy()
    cols["Trig"] = ak.unflatten(ak.zip({"bit": rng.random(k.sum()) < 0.3,
                                        "idx": rng.integers(-5, 5, k.sum()).astype(np.int8)}), k)
    return cols


def _check_equals_uproot(ds, path):
    with uproot.open(path) as fh:
        ref = fh["Events"].arrays(library="np")
    for s in ds.scalar_names:
        assert_bitwise(ds.scalar(s), ref[s], s)
    for g, names in ds.groups.items():
        values, offsets = ds.ragged(g)
        for j, v in enumerate(names):
            flat = np.concatenate(list(ref[v])) if len(ref[v]) else np.zeros(0)
            assert_bitwise(values[:, j], flat.astype(values.dtype), v)
        assert_bitwise(np.diff(offsets), np.array([len(x) for x in ref[names[0]]], dtype=np.int64), g)


CODECS = {"zlib1": lambda: uproot.ZLIB(1), "zlib9": lambda: uproot.ZLIB(9), "lzma": lambda: uproot.LZMA(1),
          "lz4": lambda: uproot.LZ4(1), "zstd": lambda: uproot.ZSTD(1), "none": lambda: None}


@pytest.mark.parametrize("codec", list(CODECS))
def test_every_codec_and_thread_count_equals_uproot(tmp_path, codec):
    try:
        path = _write(tmp_path / f"{codec}.root", _columns(), CODECS[codec]())
    except (ImportError, ModuleNotFoundError) as exc:
        pytest.skip(f"uproot cannot write {codec} here ({exc})")
    one = read_root(path, threads=1)
    assert one.ragged("Trig")[0].dtype == np.int8 and one.ragged("Muon")[0].dtype == np.float64
    _check_equals_uproot(one, path)
    for threads in (2, 5):
        assert_same_dataset(read_root(path, threads=threads), one)


@pytest.mark.parametrize("name", baskets.INFLATERS)
def test_every_inflater_gives_the_same_values(tmp_path, name):
    path = _write(tmp_path / "z.root", _columns(800), uproot.ZLIB(1), parts=3)
    try:
        baskets.set_inflater(name)
    except ImportError:
        pytest.skip(f"{name} is not installed")
    try:
        assert baskets.inflater_name() == name
        ds = read_root(path, threads=2)
    finally:
        baskets.set_inflater(None)
    _check_equals_uproot(ds, path)


def test_only_the_chosen_branches_are_read(tmp_path):
    """The progress callback counts the compressed bytes read: those of the chosen branches and the
    counter of their group, nothing else."""
    path = _write(tmp_path / "sel.root", _columns(), uproot.ZLIB(1))
    seen = []
    ds = lstm_data.open(path, columns=["Muon_pt", "Muon_eta", "MET_pt"], threads=2,
                        progress=lambda done, total: seen.append((done, total)))
    assert ds.groups == {"Muon": ["Muon_pt", "Muon_eta"]} and ds.scalar_names == ["MET_pt"]
    with uproot.open(path) as fh:
        tree = fh["Events"]
        want = sum(int(tree[b].compressed_bytes) for b in ("Muon_pt", "Muon_eta", "MET_pt"))
        everything = sum(int(b.compressed_bytes) for b in tree.branches)
    assert seen and seen[-1] == (want, want) and want < everything / 2
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_a_basket_whose_values_disagree_with_the_counter_is_located(tmp_path):
    """Rewrite one entry offset of one basket of Muon_pt (uncompressed file): the entry is named."""
    cols = _columns(300)
    path = _write(tmp_path / "plain.root", cols, None, parts=3)
    with uproot.open(path) as fh:
        branch = fh["Events"]["Muon_pt"]
        seek = int(branch.member("fBasketSeek")[1])
        last = int(branch.basket(1).member("fLast"))
        first = int(branch.member("fBasketEntry")[1])
        counts = ak.num(cols["Muon"]).to_numpy()[first:]
    e = int(np.flatnonzero(counts > 0)[0])  # an entry with a muon: claim it has one value fewer
    at = seek + last + 4 + 4 * (e + 1)  # the offset of entry e + 1 (after the count)
    data = bytearray(path.read_bytes())
    offset = int.from_bytes(data[at:at + 4], "big")
    data[at:at + 4] = (offset - 4).to_bytes(4, "big")
    path.write_bytes(bytes(data))
    with pytest.raises(FormatError, match=rf"branch 'Muon_pt' holds {counts[e] - 1} values in entry "
                                          rf"{first + e} but its counter says {counts[e]}") as err:
        read_root(path)
    assert (err.value.variable, err.value.row) == ("Muon_pt", first + e)


_LIMITED = r"""
import resource, sys
from lstm_data.io.root.memory import _proc_kib
path, extra, in_ram = sys.argv[1], int(sys.argv[2]), {"None": None, "True": True}[sys.argv[3]]
import awkward, uproot, lstm_data, lstm_data.io.root  # imported before the limit is set
resource.setrlimit(resource.RLIMIT_DATA, (_proc_kib("self/status", "VmData") + extra, resource.RLIM_INFINITY))
try:
    step = {} if in_ram else {"block_bytes": 1 << 20}  # read on demand: chunks of one cluster
    d = lstm_data.open(path, columns=sys.argv[4:] or None, in_ram=in_ram, threads=1, **step)
    print("OPENED", type(d).__name__)
except MemoryError as exc:
    print("MEMORY", exc)
"""


def test_values_larger_than_the_memory_left_fail_before_reading_with_the_routes(tmp_path):
    """in_ram=True: a MemoryError before reading, with the routes; by default: read on demand."""
    import subprocess
    import sys

    counts = np.full(4_000, 500)
    cols = {"big_a": ak.unflatten(np.zeros(counts.sum(), np.float32), counts),
            "big_b": ak.unflatten(np.zeros(counts.sum(), np.float32), counts)}  # 8 MB each once read
    path = _write(tmp_path / "big.root", cols, uproot.ZLIB(1), parts=2)
    res = subprocess.run([sys.executable, "-c", _LIMITED, str(path), str(10 << 20), "True"], capture_output=True,
                         text=True)
    assert res.stdout.startswith("MEMORY"), res.stdout + res.stderr[-2000:]
    assert "in_ram=False" in res.stdout
    assert "its 4 columns decode to about 0.01 GiB" in res.stdout  # 2 jagged, their 2 counters
    assert f"lstm-data convert '{path}:Events' data.zarr" in res.stdout and "columns=[...]" in res.stdout
    path = _write(tmp_path / "clustered.root", cols, uproot.ZLIB(1), parts=16)  # 1 MB clusters
    res = subprocess.run([sys.executable, "-c", _LIMITED, str(path), str(24 << 20), "None"], capture_output=True,
                         text=True)
    assert res.stdout.startswith("OPENED RootDataset"), res.stdout + res.stderr[-2000:]


def test_root_written_baskets_without_entry_offsets_equal_uproot():
    """A file ROOT wrote (NanoAOD-like, counted arrays whose baskets keep no entry offsets, which
    uproot's arrays() refuses): the basket path parses ROOT's own keys and gives the values uproot reads
    from the same tree written with offsets, on one thread or two."""
    from pathlib import Path

    data = Path(__file__).resolve().parents[1] / "data"
    one = read_root(data / "uproot-small-dy-nooffsets.root", threads=1)
    assert one.groups == {"Jet": ["Jet_jetId", "Jet_pt"], "Muon": ["Muon_charge", "Muon_pt"]}
    with uproot.open(data / "uproot-small-dy-withoffsets.root") as fh:
        ref = fh["tree"].arrays(library="np")
    for s in one.scalar_names:
        assert_bitwise(one.scalar(s), ref[s], s)
    for g, names in one.groups.items():
        values, offsets = one.ragged(g)
        assert_bitwise(np.diff(offsets), np.array([len(x) for x in ref[names[0]]], dtype=np.int64), g)
        for j, v in enumerate(names):
            assert_bitwise(values[:, j], np.concatenate(list(ref[v])).astype(values.dtype), v)
    assert_same_dataset(read_root(data / "uproot-small-dy-nooffsets.root", threads=2), one)


def test_root_written_vectors_and_objects_equal_uproot():
    """std::vector<float/int/bool> baskets (10-byte header per entry) are cut on threads; TVector2/3 and
    TLorentzVector members are numeric columns (MET.fX, jetp4.fP.fX)."""
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "data" / "uproot-HZZ-objects.root"
    one = read_root(path, threads=1)
    assert one.skipped == {} and len(one) == 2421
    assert one.groups["jetp4"] == ["jetp4.fP.fX", "jetp4.fP.fY", "jetp4.fP.fZ", "jetp4.fE"]
    assert one.ragged("jetid")[0].dtype == np.bool_ and one.ragged("muonq")[0].dtype == np.int32
    with uproot.open(path) as fh:
        tree = fh["events"]
        assert_bitwise(one.scalar("MET.fY"), ak.to_numpy(tree["MET"].array().fY))
        jets = tree["jetp4"].array()
        assert_bitwise(one.ragged("jetp4")[0][:, 3], ak.to_numpy(ak.flatten(jets.fE)))
        for v in ("jetbtag", "jetid", "muonq", "photoniso"):
            ref = tree[v].array()
            values, offsets = one.ragged(v)
            assert_bitwise(values[:, 0], ak.to_numpy(ak.flatten(ref)), v)
            assert_bitwise(np.diff(offsets), ak.to_numpy(ak.num(ref)).astype(np.int64), v)
    assert_same_dataset(read_root(path, threads=2), one)


def test_the_group_block_of_a_freed_dataset_is_reused_by_the_next_open(tmp_path):
    from lstm_data._util import reuse

    rng = np.random.default_rng(4)
    k = rng.integers(0, 9, 150_000)
    cols = {"Part": ak.unflatten(ak.zip({c: rng.normal(size=k.sum()).astype(np.float32) for c in "abcd"}), k)}
    path = _write(tmp_path / "big.root", cols, uproot.ZLIB(1), parts=3)  # a block of several MiB
    first = lstm_data.open(str(path), read=lstm_data.ReadOptions(threads=2))
    block = first.ragged("Part")[0]
    assert any(np.shares_memory(block, b) for b in reuse._blocks)
    second = lstm_data.open(str(path), read=lstm_data.ReadOptions(threads=2))
    assert not np.shares_memory(second.ragged("Part")[0], block)  # in use: not taken
    del first, block
    third = lstm_data.open(str(path), read=lstm_data.ReadOptions(threads=2))
    assert any(np.shares_memory(third.ragged("Part")[0], b) for b in reuse._blocks)
    _check_equals_uproot(third, path)
