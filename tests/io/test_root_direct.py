"""ROOT trees read on demand basket by basket, straight into the rows asked for
(:mod:`lstm_data.io.root.direct`): bitwise the in-RAM values over several files and tiny
windows, chunks taken whole or in part, and a damaged basket a located error."""
from __future__ import annotations

import numpy as np
import pytest

uproot = pytest.importorskip("uproot")
ak = pytest.importorskip("awkward")

import lstm_data  # noqa: E402
from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars  # noqa: E402
from lstm_data.errors import FormatError  # noqa: E402
from tests.helpers import assert_same_batch, assert_same_dataset  # noqa: E402


def _write(path, n, parts, seed, start):
    """A JetClass-like tree (a counter ``npart``, float32 and int32 particle branches), one
    cluster per part; ``row`` numbers the entries across files."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 9, n)
    total = int(counts.sum())
    cols = {"part": ak.unflatten(ak.zip({"px": rng.normal(size=total).astype(np.float32),
                                         "py": rng.normal(size=total).astype(np.float32),
                                         "q": rng.integers(-1, 2, total).astype(np.int32)}), counts),
            "jet_pt": rng.exponential(50.0, n).astype(np.float32),
            "label": rng.integers(0, 5, n).astype(np.int32),
            "row": np.arange(start, start + n, dtype=np.int64)}
    with uproot.recreate(path) as fh:
        tree = fh.mktree("Events", {k: v.type.content if isinstance(v, ak.Array) else v.dtype
                                    for k, v in cols.items()})
        cuts = np.linspace(0, n, parts + 1).astype(int)
        for a, b in zip(cuts[:-1], cuts[1:]):
            tree.extend({k: v[a:b] for k, v in cols.items()})
    return str(path)


def _files(tmp_path, k=3, n=900):
    return [_write(tmp_path / f"f{i}.root", n, parts=6, seed=i, start=n * i) for i in range(k)]


def _spec():
    return BatchSpec(inputs={"part": Ragged(["part_px", "part_py", "part_q"], max_len=5),
                             "jet": Scalars(["jet_pt"])}, targets={"row": Scalars(["row", "label"])})


def test_the_basket_path_serves_every_column_of_these_files(tmp_path):
    lazy = lstm_data.open(_files(tmp_path, k=1), in_ram=False)
    assert lazy._direct(lazy.scalar_names, list(lazy.groups)) is not None


@pytest.mark.parametrize("block_rows", [None, 70])  # whole chunks; blocks cutting chunks (in part)
@pytest.mark.parametrize("read_ahead", [False, True])
def test_block_shuffled_epochs_over_files_with_tiny_windows_equal_the_in_ram_batches(tmp_path, block_rows,
                                                                                      read_ahead):
    paths = _files(tmp_path)
    lazy = lstm_data.open(paths, in_ram=False, threads=2)
    whole = lstm_data.open(paths, in_ram=True)
    order = Order(batch_size=64, shuffle="block", seed=3, read_ahead=read_ahead, window_rows=128,
                  block_rows=block_rows)
    b = Batches(lazy, _spec(), order)
    for epoch in range(2):
        seen = []
        for i in range(len(b)):
            got = b.batch(i, epoch)
            rows = got[1]["row"][:, 0].astype(np.intp)
            seen.append(rows)
            if i % 7 == 0 or i == len(b) - 1:
                ref = Batches(whole.take(rows), _spec(), Order(batch_size=len(rows), shuffle=False))[0]
                assert_same_batch(got, ref)
        assert np.array_equal(np.sort(np.concatenate(seen)), np.arange(len(whole)))  # every row once


def test_rows_in_any_order_ranges_and_single_columns_equal_the_in_ram_values(tmp_path):
    paths = _files(tmp_path, k=2)
    lazy = lstm_data.open(paths, in_ram=False, threads=2)
    whole = lstm_data.open(paths, in_ram=True)
    rng = np.random.default_rng(1)
    for rows in (rng.integers(0, len(whole), 300), np.arange(100, 1500), np.arange(1700, 50, -3),
                 np.zeros(0, dtype=np.intp)):
        assert_same_dataset(lazy.take(rows), whole.take(rows))
        for got, want in zip(lazy.ragged("part", rows), whole.ragged("part", rows)):
            assert got.tobytes() == want.tobytes() and got.dtype == want.dtype
        assert lazy.scalar("label", rows).tobytes() == whole.scalar("label", rows).tobytes()
    part = lazy.datasets[1]
    off = part.offsets("part")
    out = np.empty((int(off[450] - off[33]), 3), dtype=part.ragged("part", [0])[0].dtype)
    part.ragged_into("part", 33, 450, out)
    assert out.tobytes() == whole.datasets[1].ragged("part", slice(33, 450))[0].tobytes()


def test_a_damaged_basket_read_on_demand_names_file_branch_and_basket(tmp_path):
    paths = _files(tmp_path, k=2)
    with uproot.open(paths[1]) as fh:
        branch = fh["Events"]["part_py"]
        seek, nbytes = int(branch.member("fBasketSeek")[2]), int(branch.member("fBasketBytes")[2])
        first, stop = (int(x) for x in branch.entry_offsets[2:4])
    lazy = lstm_data.open(paths, in_ram=False, threads=2)  # opened before the damage: the counts are known
    with open(paths[1], "r+b") as fh:
        fh.seek(seek + nbytes // 2)
        fh.write(b"\xff" * 32)
    b = Batches(lazy, _spec(), Order(batch_size=64, shuffle="block", seed=3, window_rows=128))
    with pytest.raises(FormatError, match=rf"cannot read basket 2 \(entries {first}:{stop}\) of branch "
                                          r"'part_py'; damaged file\?") as err:
        for i in range(len(b)):
            b[i]
    assert (err.value.file, err.value.variable, err.value.row) == (paths[1], "part_py", first)


def _baskets_per_call(monkeypatch):
    """Record the number of baskets of each call of the compiled chunk inflater."""
    from lstm_data.io.root import chunk_inflate

    calls: list[int] = []
    real = chunk_inflate.inflate_baskets

    def counted(raw, table, out, functions):
        calls.append(len(table))
        return real(raw, table, out, functions)

    monkeypatch.setattr(chunk_inflate, "inflate_baskets", counted)
    return calls


def _float_tree(path, compression):
    """Float particle branches sharing a counter, in three clusters of 200 entries."""
    rng = np.random.default_rng(4)
    counts = rng.integers(0, 9, 600)
    part = ak.unflatten(ak.zip({"px": rng.normal(size=counts.sum()).astype(np.float32),
                                "py": np.round(rng.normal(size=counts.sum()), 1).astype(np.float32)}), counts)
    with uproot.recreate(path, compression=compression) as fh:
        tree = fh.mktree("Events", {"part": part.type.content})
        for a in range(0, 600, 200):
            tree.extend({"part": part[a:a + 200]})
    return str(path)


@pytest.mark.parametrize("codec", ["zlib", "lz4", "lzma", "none"])
def test_a_chunks_baskets_are_inflated_in_one_call_per_task(tmp_path, monkeypatch, codec):
    pytest.importorskip("deflate")
    calls = _baskets_per_call(monkeypatch)
    compression = {"zlib": uproot.ZLIB(1), "lz4": uproot.LZ4(1), "lzma": uproot.LZMA(1), "none": None}[codec]
    path = _float_tree(tmp_path / "c.root", compression)
    lazy = lstm_data.open(path, in_ram=False, threads=1)
    whole = lstm_data.open(path, in_ram=True)
    assert_same_dataset(lazy.take(np.arange(600)), whole)
    # one call for the chunk (its three clusters) and group: its 6 baskets; other codecs fall back
    assert calls and calls[0] == 6


@pytest.mark.parametrize("field, value, said", [
    (slice(3, 6), (1 << 23).to_bytes(3, "little"), "compressed block 0 is cut short"),
    (slice(6, 9), ((1 << 24) - 1).to_bytes(3, "little"), "declare more uncompressed bytes than the"),
])
def test_a_hostile_block_header_read_on_demand_names_the_basket(tmp_path, field, value, said):
    pytest.importorskip("deflate")
    paths = [_float_tree(tmp_path / "f.root", uproot.ZLIB(1))]
    with uproot.open(paths[0]) as fh:
        branch = fh["Events"]["part_px"]
        seek = int(branch.member("fBasketSeek")[1])
        first, stop = (int(x) for x in branch.entry_offsets[1:3])
    lazy = lstm_data.open(paths, in_ram=False, threads=2)
    with open(paths[0], "r+b") as fh:
        fh.seek(seek + 14)
        keylen = int.from_bytes(fh.read(2), "big")
        fh.seek(seek + keylen + field.start)
        fh.write(value)
    with pytest.raises(FormatError, match=rf"cannot read basket 1 \(entries {first}:{stop}\) of branch "
                                          rf"'part_px'; damaged file\? \(ValueError: .*{said}") as err:
        lazy.take(np.arange(600))
    assert (err.value.file, err.value.variable, err.value.row) == (paths[0], "part_px", first)
