"""Consecutive rows of several parts (zarr, HDF5, in RAM, parts of parts) read in place into one
buffer: bitwise the rows of one in-RAM dataset, in the common dtype of the parts, and a damaged,
lost or swapped chunk file an error that names it."""
from __future__ import annotations

import shutil
import warnings

import h5py
import numpy as np
import pytest

import lstm_data
import lstm_data.data.concat_reads as concat_module
from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars
from lstm_data.data.concat import ConcatDataset, concat_datasets
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.data.ragged import RaggedGroup
from lstm_data.data.synthetic import make_dataset
from lstm_data.errors import FormatError, PrecisionWarning
from tests.helpers import assert_bitwise, assert_same_batch

N = 240
CHUNK = 4096  # bytes: several value chunks per file


@pytest.fixture(scope="module")
def ref():
    """240 rows with NaNs in a prong variable and in a scalar (compared bitwise, NaN included)."""
    ds = make_dataset(N, seed=11)
    values, offsets = ds.ragged("png")
    values = values.copy()
    values[::7, 2] = np.nan
    scalars = {s: ds.scalar(s).copy() for s in ds.scalar_names}
    scalars["calE"][::5] = np.nan
    groups = {g: RaggedGroup(ds.groups[g], *(ds.ragged(g) if g != "png" else (values, offsets)))
              for g in ds.groups}
    return InMemoryDataset(scalars, groups)


def _spec(ds, dtype=np.float32, nan_to=None):
    return BatchSpec(inputs={"png": Ragged(ds.groups["png"][:4], max_len=5, dtype=dtype),
                             "png2d": Ragged(ds.groups["png2d"][:2], max_len=3, dtype=dtype)},
                     targets={"t": Scalars(ds.scalar_names[:3], dtype=dtype)}, nan_to=nan_to)


def _same_batches(got_ds, want_ds, spec, size):
    """Every batch of ``got_ds`` in file order, bitwise those of ``want_ds`` (in RAM)."""
    got = Batches(got_ds, spec, Order(batch_size=size, shuffle=False, read_ahead=False))
    want = Batches(want_ds, spec, Order(batch_size=size, shuffle=False))
    assert len(got) == len(want) == -(-len(want_ds) // size)
    for i in range(len(got)):
        assert_same_batch(got.batch(i), want.batch(i), f"batch {i} of {size}")


def _write(part, path):
    if path.suffix == ".h5":
        part.to_hdf5(path, chunk_bytes=CHUNK)
    else:
        part.to_zarr(path, chunk_bytes=CHUNK)
    return lstm_data.open(path)


def _files(ref, tmp_path, cuts, kinds=("zarr",)):
    """``ref``'s rows cut at ``cuts``, part ``i`` written as ``kinds[i % len(kinds)]`` ("ram": kept in RAM)."""
    parts = []
    for i, (lo, hi) in enumerate(zip(cuts[:-1], cuts[1:])):
        kind, part = kinds[i % len(kinds)], ref.take(np.arange(lo, hi))
        parts.append(part if kind == "ram" else _write(part, tmp_path / f"p{i}.{kind}"))
    return parts


def _check_ragged(many, want, rows):
    """``many``'s consecutive-rows group reads of ``rows`` against ``want`` (in RAM)."""
    for g in want.groups:
        pieces, at = many.ragged_pieces(g, rows)
        assert len(pieces) == 1 and at.tolist() == list(range(len(rows)))
        for got, ref_part in zip(pieces[0], want.ragged(g, rows)):
            assert_bitwise(got, ref_part, f"{g} rows {rows[0]}..{rows[-1]}")


def _check_rows(many, want, rows):
    """``many``'s consecutive-rows reads (groups and scalars) of ``rows`` against ``want``."""
    _check_ragged(many, want, rows)
    cols = many.scalars_at(want.scalar_names, rows)
    for s in want.scalar_names:  # a scalar comes in the dtype of the files the rows are in
        w = want.scalar(s, rows)
        assert np.can_cast(cols[s].dtype, w.dtype, "safe"), (s, cols[s].dtype)
        assert_bitwise(cols[s].astype(w.dtype), w, s)


def _in_ram_batch(want, spec, rows):
    """The batch of ``rows`` (in that order) built from RAM."""
    return Batches(want.take(rows), spec, Order(batch_size=len(rows), shuffle=False)).batch(0)


# cuts: a file of 1 row (50..51), an empty file (51..51), files of 79, 70, 40 rows
CUTS = [0, 50, 51, 51, 130, 200, 240]
RANGES = [(0, 50), (50, 51), (49, 52), (45, 140), (0, N), (129, 131), (200, 240), (239, 240)]


@pytest.fixture(params=[False, True], ids=["one_thread", "helper"])
def helper(request, monkeypatch):
    """With ``helper``, every read over several files gives half of them to a helper thread."""
    if request.param:
        monkeypatch.setattr(concat_module, "_PARALLEL_BYTES", 0)


@pytest.mark.parametrize("kinds", [("zarr",), ("zarr", "h5", "ram"), ("h5", "ram", "zarr")])
def test_consecutive_rows_of_mixed_parts_are_the_rows_in_ram(ref, tmp_path, kinds, helper):
    many = ConcatDataset(_files(ref, tmp_path, CUTS, kinds))
    assert len(many) == N and not many.in_ram
    for lo, hi in RANGES:
        _check_rows(many, ref, np.arange(lo, hi))
    for nan_to in (None, -9.0):  # sizes 50: batches on file boundaries, a short last; 35: over 3 files
        for size in (50, 35):
            _same_batches(many, ref, _spec(ref, nan_to=nan_to), size)


def _nested(ref, tmp_path):
    a, b, c, d, e = _files(ref, tmp_path, [0, 40, 41, 100, 170, 240], ("zarr", "h5", "ram", "h5", "zarr"))
    return ConcatDataset([a, ConcatDataset([b, ConcatDataset([c, d])]), e])


def test_parts_of_parts_read_as_one(ref, tmp_path):
    a, b, c, d, e = _files(ref, tmp_path, [0, 40, 41, 100, 170, 240], ("zarr", "h5", "ram", "h5", "zarr"))
    nested = ConcatDataset([a, ConcatDataset([b, ConcatDataset([c, d])]), e])
    for lo, hi in RANGES + [(39, 171), (40, 41), (0, 40), (41, 100), (45, 60)]:
        _check_rows(nested, ref, np.arange(lo, hi))
    _same_batches(nested, ref, _spec(ref), 41)


def _wide(part):
    """``part`` with float64 values that float32 does not hold (``x + 0.1``)."""
    groups = {g: RaggedGroup(part.groups[g], part.ragged(g)[0].astype(np.float64) + 0.1, part.ragged(g)[1])
              for g in part.groups}
    return InMemoryDataset({s: part.scalar(s).astype(np.float64) + 0.1 for s in part.scalar_names}, groups)


@pytest.mark.parametrize("kinds", [("zarr",), ("h5", "zarr"), ("ram", "h5")])
def test_a_float64_file_among_float32_files_keeps_its_values(ref, tmp_path, kinds, helper):
    cuts = [0, 60, 61, 150, 240]
    parts = [ref.take(np.arange(lo, hi)) for lo, hi in zip(cuts[:-1], cuts[1:])]
    parts[2] = _wide(parts[2])
    want = concat_datasets(parts)
    assert want.ragged("png")[0].dtype == np.float64
    files = [p if kinds[i % len(kinds)] == "ram" else _write(p, tmp_path / f"w{i}.{kinds[i % len(kinds)]}")
             for i, p in enumerate(parts)]
    assert files[2].ragged("png")[0].dtype == np.float64  # the writers keep the dtype
    many = ConcatDataset(files)
    for lo, hi in [(0, N), (55, 65), (60, 62), (100, 200), (150, 240), (0, 60)]:
        _check_rows(many, want, np.arange(lo, hi))
    for dtype in (np.float32, np.float64):
        _same_batches(many, want, _spec(ref, dtype), 64)
    row = 61 + int(np.argmax(np.diff(parts[2].offsets("png")) > 0))  # a row of the float64 file with prongs
    x = Batches(many, _spec(ref, np.float64), Order(batch_size=N, shuffle=False, read_ahead=False)).batch(0)[0]
    first = want.ragged("png", [row])[0][0, :4]
    assert_bitwise(x["png"][row, 0], first)  # x + 0.1 exactly, not its float32


def _ints(n, seed, dtype, big=None, evt=np.int64):
    rng = np.random.default_rng(seed)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(rng.integers(0, 4, n), out=offsets[1:])
    values = rng.integers(-30000, 30000, (int(offsets[-1]), 2)).astype(dtype)
    scalars = {"evt": rng.integers(0, 1 << 20, n).astype(evt), "e": rng.random(n).astype(np.float32)}
    if big is not None:  # an id float64 does not hold, in the values and in the scalar
        values[len(values) // 2, 1] = scalars["evt"][n // 2] = big
    return InMemoryDataset(scalars, {"hit": RaggedGroup(["hit.id", "hit.q"], values, offsets)})


@pytest.mark.parametrize("kinds", [("zarr",), ("h5", "zarr")])
def test_integer_files_of_several_widths_read_exactly(tmp_path, kinds):
    parts = [_ints(30, 0, np.int16), _ints(1, 1, np.int32), _ints(45, 2, np.int64), _ints(0, 3, np.int16),
             _ints(25, 4, np.int32)]
    want = concat_datasets(parts)
    files = [_write(p, tmp_path / f"i{i}.{kinds[i % len(kinds)]}") for i, p in enumerate(parts)]
    assert [f.ragged("hit")[0].dtype for f in files] == [p.ragged("hit")[0].dtype for p in parts]
    many = ConcatDataset(files)
    assert many.ragged("hit", np.arange(0, 101))[0].dtype == np.int64
    for lo, hi in [(0, 101), (29, 32), (30, 31), (31, 76), (75, 101)]:
        _check_rows(many, want, np.arange(lo, hi))
    spec = BatchSpec(inputs={"hit": Ragged(["hit.id", "hit.q"], max_len=4, dtype=np.float64)},
                     targets={"t": Scalars(["evt", "e"], dtype=np.float64)})
    _same_batches(many, want, spec, 31)


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("field, where", [
    ("group", "ram"), ("group", "disk"), ("scalar", "ram"), ("scalar", "disk")])
def test_an_int64_beyond_float64_among_float32_files_is_not_changed_silently(tmp_path, field, where, shuffle):
    big = 2**53 + 1
    parts = [_ints(20, 0, np.float32, evt=np.float32), _ints(20, 1, np.int64, big=big)]
    if where == "disk":
        parts = [_write(p, tmp_path / f"b{i}.zarr") for i, p in enumerate(parts)]
    out = (Ragged(["hit.id", "hit.q"], max_len=4, dtype=np.float64) if field == "group"
           else Scalars(["evt", "e"], dtype=np.float64))
    spec = BatchSpec(inputs={f"ids_{field}_{where}_{shuffle}": out})  # a name warns once: one per case
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrecisionWarning)
        with pytest.raises(PrecisionWarning, match=str(big)):
            Batches(ConcatDataset(parts), spec,
                    Order(batch_size=40, shuffle=shuffle, seed=1, read_ahead=False)).batch(0)


@pytest.fixture(scope="module")
def stores(ref, tmp_path_factory):
    """``ref`` as one zarr store and as 7 small ones (of 1 and 0 rows among them), opened."""
    root = tmp_path_factory.mktemp("stores")
    one = _write(ref, root / "one.zarr")
    cuts = [0, 30, 31, 31, 90, 150, 151, 200, 240]
    _files(ref, root, cuts)
    return one, lstm_data.open([root / f"p{i}.zarr" for i in range(len(cuts) - 1)])


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("size", [30, 64, 240])
def test_batches_over_many_small_files_are_those_of_one_store(ref, stores, shuffle, size):
    one, many = stores
    assert isinstance(many, ConcatDataset) and len(many.datasets) == 7  # the empty file left out
    spec = _spec(ref)
    order = Order(batch_size=size, shuffle=shuffle, seed=5, read_ahead=False)
    got, want = Batches(many, spec, order), Batches(one, spec, order)
    assert len(got) == len(want) == -(-N // size)
    for epoch in (0, 1):
        for i in range(len(got)):
            rows = got.rows_of(i, epoch)
            np.testing.assert_array_equal(rows, want.rows_of(i, epoch))
            assert_same_batch(got.batch(i, epoch), want.batch(i, epoch), f"epoch {epoch} batch {i}")
            if not shuffle:
                assert_same_batch(got.batch(i, epoch), _in_ram_batch(ref, spec, rows), f"batch {i} in RAM")


@pytest.mark.parametrize("ahead", [False, True])
def test_block_shuffle_over_many_small_files_takes_every_row_once(ref, stores, ahead):
    _, many = stores
    spec = _spec(ref)
    b = Batches(many, spec, Order(batch_size=32, shuffle="block", seed=9, read_ahead=ahead))
    orders = []
    for epoch in (0, 1):
        rows = [b.rows_of(i, epoch) for i in range(len(b))]
        np.testing.assert_array_equal(np.sort(np.concatenate(rows)), np.arange(N))
        orders.append(np.concatenate(rows))
        for i, r in enumerate(rows):
            assert_same_batch(b.batch(i, epoch), _in_ram_batch(ref, spec, r), f"epoch {epoch} batch {i}")
    assert not np.array_equal(orders[0], orders[1])
    for runs in ([(150, 200), (0, 31), (200, 210)], [(140, 152), (0, 31), (89, 95)]):  # windows of blocks
        window = np.concatenate([np.arange(a, z) for a, z in runs])  # one run per file; a file twice
        got = many.take(window)
        for g in ref.groups:
            for x, y in zip(got.ragged(g), ref.ragged(g, window)):
                assert_bitwise(x, y, g)


@pytest.fixture(scope="module")
def four(ref, tmp_path_factory):
    """``ref`` in 4 zarr stores of 60 rows, written once (tests damage copies of them)."""
    root = tmp_path_factory.mktemp("four")
    _files(ref, root, [0, 60, 120, 180, 240])
    return root


def _copies(four, tmp_path):
    for i in range(4):
        shutil.copytree(four / f"p{i}.zarr", tmp_path / f"p{i}.zarr")
    return [tmp_path / f"p{i}.zarr" for i in range(4)]


def _damage(path, how, other=None):
    raw = path.read_bytes()
    if how == "garbage":
        path.write_bytes(np.random.default_rng(0).integers(0, 256, len(raw), dtype=np.uint8).tobytes())
    elif how == "truncated":
        path.write_bytes(raw[:len(raw) // 2])
    elif how == "deleted":
        path.unlink()
    else:  # "swapped" with ``other``
        theirs = other.read_bytes()
        path.write_bytes(theirs)
        other.write_bytes(raw)


def _read_all(many, ref, rows=np.arange(N)):
    """A consecutive read of every group and scalar, and the batches in file order."""
    for g in ref.groups:
        many.ragged_pieces(g, rows)
    many.scalars_at(ref.scalar_names, rows)
    b = Batches(many, _spec(ref), Order(batch_size=50, shuffle=False, read_ahead=False))
    return [b.batch(i) for i in range(len(b))]


@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize("how", ["garbage", "truncated", "deleted"])
def test_a_damaged_chunk_file_of_one_part_is_an_error_naming_it(ref, four, tmp_path, how, warm):
    paths = _copies(four, tmp_path)
    many = lstm_data.open(paths)
    if warm:  # every chunk read (and its checksum passed) before the damage
        _read_all(many, ref)
    chunk = "png/values/c/1/0"
    _damage(paths[2] / chunk, how)
    with pytest.raises(FormatError) as err:
        many.ragged_pieces("png", np.arange(100, 200))
    message = str(err.value)
    assert "p2.zarr" in message and "png/values" in message, message
    assert not any(f"p{i}.zarr" in message for i in (0, 1, 3)), message
    with pytest.raises(FormatError, match="p2.zarr"):
        _read_all(many, ref)
    _check_rows(many, ref, np.arange(0, 120))  # the other files read on
    with pytest.raises(FormatError, match="p2.zarr"):
        _read_all(lstm_data.open(paths), ref, np.arange(120, 240))


@pytest.mark.parametrize("how", ["garbage", "truncated", "deleted"])
def test_a_damaged_scalar_chunk_is_an_error_at_open_and_not_read_after(ref, four, tmp_path, how):
    """Scalars are read whole when a store is opened: damage after that changes no number."""
    paths = _copies(four, tmp_path)
    many = lstm_data.open(paths)
    _damage(paths[2] / "calE" / "c" / "0", how)
    _check_rows(many, ref, np.arange(100, 200))
    with pytest.raises(FormatError, match=r"p2\.zarr.*calE|calE.*p2\.zarr"):
        _read_all(lstm_data.open(paths), ref)


def _twin(part):
    """``part`` with other values (``x + 1``) in the same shapes: its chunk files are the same size."""
    groups = {g: RaggedGroup(part.groups[g], part.ragged(g)[0] + 1, part.ragged(g)[1]) for g in part.groups}
    return InMemoryDataset({s: part.scalar(s) + 1 for s in part.scalar_names}, groups)


@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize("chunk", ["png/values/c/1/0", "trueE/c/0"])
def test_a_chunk_swapped_with_another_parts_same_chunk_is_an_error(ref, tmp_path, chunk, warm):
    """The manifest records each chunk's size and CRC-32C at its place: a sound chunk of another
    store at the same key is found out, not read as the other file's numbers."""
    first = ref.take(np.arange(60))
    parts = [ref.take(np.arange(100, 160)), first, _twin(first), ref.take(np.arange(200, 240))]
    paths = [tmp_path / f"p{i}.zarr" for i in range(4)]
    for p, path in zip(parts, paths):
        p.to_zarr(path, chunk_bytes=CHUNK, clevel=0)
    mine, theirs = paths[2] / chunk, paths[1] / chunk
    assert mine.stat().st_size == theirs.stat().st_size and mine.read_bytes() != theirs.read_bytes()
    many = lstm_data.open(paths)
    want = concat_datasets(parts)
    if warm:
        for lo, hi in [(0, 220), (60, 180)]:
            _check_rows(many, want, np.arange(lo, hi))
    _damage(mine, "swapped", theirs)
    group = chunk.split("/")[0]
    if group in ref.groups:
        for rows in (np.arange(110, 130), np.arange(50, 190)):
            with pytest.raises(FormatError, match=r"p[12]\.zarr") as err:
                many.ragged_pieces(group, rows)
            assert "another chunk" in str(err.value), str(err.value)
    else:  # scalars were read at open: the numbers stay right, a new open refuses
        _check_rows(many, want, np.arange(50, 190))
    with pytest.raises(FormatError, match=r"another chunk's bytes.*p[12]\.zarr"):
        _read_all(lstm_data.open(paths), ref, np.arange(0, 220))


@pytest.mark.parametrize("how", ["flipped", "truncated"])
def test_a_damaged_hdf5_chunk_among_zarr_parts_is_an_error_naming_the_file(ref, tmp_path, how):
    parts = _files(ref, tmp_path, [0, 60, 120, 240], ("zarr", "h5", "zarr"))
    h5 = tmp_path / "p1.h5"
    with h5py.File(h5, "r") as f:
        info = f["png/values"].id.get_chunk_info(1)
    many = ConcatDataset(parts)  # opened before the damage
    with open(h5, "r+b") as fh:
        if how == "truncated":  # the file ends inside the second values chunk
            fh.truncate(info.byte_offset + info.size // 2)
        else:  # a byte of the second values chunk flipped in place
            fh.seek(info.byte_offset + info.size // 2)
            byte = fh.read(1)
            fh.seek(info.byte_offset + info.size // 2)
            fh.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(FormatError, match="p1.h5") as err:
        many.ragged_pieces("png", np.arange(30, 200))
    assert not any(f"p{i}.zarr" in str(err.value) for i in (0, 2)), str(err.value)
    with pytest.raises(FormatError, match="p1.h5"):
        _read_all(many, ref)
