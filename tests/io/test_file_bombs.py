"""Small hostile files that declare or inflate to gigabytes: each is refused with a located error of
lstm_data's own type, in a child process whose peak memory stays far below what the file declares."""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

#: the bombs below declare or inflate to 2 GiB and more; a reader that follows them fails on this cap,
#: never the machine, and shows a peak of about 1.5 GiB where a bounded one stays at a few hundred MiB
_CAP = 3 << 29
_BOUNDED_MIB = 500

#: opens argv[1] with the keywords JSON argv[2] (a zlib inflater to use: "inflater") and reads every
#: column; prints what it raised and the child's peak resident memory
_CHILD = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({cap}, {cap}))
import lstm_data
options = json.loads(sys.argv[2])
inflater = options.pop("inflater", None)
if inflater:
    from lstm_data.io.root import baskets
    baskets.set_inflater(inflater)
said = {{}}
try:
    ds = lstm_data.open(sys.argv[1], **options)
    for name in ds.scalar_names:
        ds.scalar(name)
    for group in ds.groups:
        ds.ragged(group)
    said["error"] = None
except BaseException as exc:
    said["error"], said["message"] = type(exc).__name__, str(exc)
hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
said["peak_mib"] = int(hwm.split()[1]) // 1024
print(json.dumps(said))
"""


def _open_in_child(path: Path, **options: object) -> dict:
    done = subprocess.run([sys.executable, "-c", _CHILD.format(cap=_CAP), str(path), json.dumps(options)],
                          capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[2])
    assert done.returncode == 0, done.stderr[-3000:]
    said: dict = json.loads(done.stdout.strip().splitlines()[-1])
    return said


def _assert_refused(said: dict, error: str, *words: str) -> None:
    assert said["error"] == error, said
    for word in words:
        assert word in said["message"], (word, said)
    assert said["peak_mib"] < _BOUNDED_MIB, said


# --- ROOT: a basket's compressed blocks --------------------------------------------------------------

_KEY = struct.Struct(">ihiIhh")
_MAX_BLOCK = 0xFFFFFF  # a block header's 3-byte uncompressed size
_N = 600_000  # entries of the basket forged: about 3 MB on disk


def _root_with_one_basket(path: Path, n: int) -> tuple[int, int, int]:
    """A tree ``Events`` with the float64 branch ``x`` of ``n`` values in one zlib basket (half of
    their bytes random: it is compressed, to about 60%); returns the basket's seek, bytes on disk
    and key length."""
    uproot = pytest.importorskip("uproot")
    values = np.random.default_rng(3).integers(0, 1 << 32, n, dtype=np.uint64).view(np.float64)
    with uproot.recreate(path, compression=uproot.ZLIB(1)) as fh:
        fh.mktree("Events", {"x": np.float64}).extend({"x": values})
    with uproot.open(path) as fh:
        branch = fh["Events"]["x"]
        assert branch.member("fWriteBasket") == 1
        seek, size = int(branch.member("fBasketSeek")[0]), int(branch.member("fBasketBytes")[0])
    with open(path, "rb") as fh:
        fh.seek(seek)
        keylen = _KEY.unpack(fh.read(_KEY.size))[4]
    return seek, size, keylen


def _block(algo: bytes, body: bytes, usize: int) -> bytes:
    c, u = len(body), usize
    return algo + b"\x08" + bytes([c & 255, c >> 8 & 255, c >> 16, u & 255, u >> 8 & 255, u >> 16]) + body


def _filler(room: int) -> bytes:
    """A zlib block of exactly ``room`` bytes (header included) of stored random bytes."""
    data = np.random.default_rng(5).integers(0, 256, room, dtype=np.uint8).tobytes()
    for n in range(room - 9, 0, -1):
        body = zlib.compress(data[:n], 0)
        if len(body) == room - 9:
            return _block(b"ZL", body, n)
    raise AssertionError(f"no stored zlib block of {room} bytes")


def _patch(path: Path, seek: int, payload: bytes, objlen: int | None = None) -> None:
    with open(path, "r+b") as fh:
        if objlen is not None:  # the key's fObjlen: after fNbytes and fVersion
            fh.seek(seek + 6)
            fh.write(struct.pack(">I", objlen))
        fh.seek(seek)
        keylen = _KEY.unpack(fh.read(_KEY.size))[4]
        fh.seek(seek + keylen)
        fh.write(payload)


@pytest.mark.parametrize("forged_key", [False, True], ids=["blocks over the key", "key over the entries"])
def test_a_basket_of_blocks_inflating_to_gigabytes_is_refused_before_inflating(tmp_path, forged_key):
    path = tmp_path / "bomb.root"
    seek, size, keylen = _root_with_one_basket(path, _N)
    bomb = _block(b"ZL", zlib.compress(bytes(_MAX_BLOCK), 9), _MAX_BLOCK) * 140  # 2.3 MB, 2.2 GiB inflated
    room = size - keylen - len(bomb)
    assert room > 1000, room
    # the key's object length as it was, or the most a key declares (a signed 32-bit size)
    _patch(path, seek, bomb + _filler(room), objlen=2**31 - 1 if forged_key else None)
    said = _open_in_child(path, threads=1)
    words = ["bomb.root", "'x'", "basket 0", "entries 0:600000"]
    words.append("its 600000 entries hold at most" if forged_key else "more than the 4,800,000 its key says")
    _assert_refused(said, "FormatError", *words)


def test_a_zlib_block_inflating_beyond_its_header_stops_at_its_size(tmp_path):
    """One block whose header declares the basket's size and whose stream holds 2.2 GiB of zeros,
    read with Python's zlib (libdeflate is bounded by its output buffer anyway)."""
    path = tmp_path / "bomb.root"
    seek, size, keylen = _root_with_one_basket(path, _N)
    deflater = zlib.compressobj(9)
    first = deflater.compress(bytes(1 << 24)) + deflater.flush(zlib.Z_FULL_FLUSH)
    again = deflater.compress(bytes(1 << 24)) + deflater.flush(zlib.Z_FULL_FLUSH)  # the same bytes each time
    total = (1 + 138) << 24
    stream = first + again * 138 + deflater.flush()[:-4] + struct.pack(">I", (total % 65521) << 16 | 1)
    assert len(stream) + 9 < size - keylen
    body = stream + bytes(size - keylen - 9 - len(stream))  # trailing bytes after the stream's end
    _patch(path, seek, _block(b"ZL", body, 8 * _N))
    said = _open_in_child(path, threads=1, inflater="zlib")
    _assert_refused(said, "FormatError", "bomb.root", "'x'", "basket 0", "4,800,000")


# --- CSV: compressed text inflating a thousandfold ----------------------------------------------------

def _gzip_of_a_line_without_end(path: Path, pieces: int) -> None:
    """A header, then one line of ``pieces`` times 16 MiB of digits that never ends: 16 KB a piece.
    Its trailer is zeros: a reader that reaches it has inflated everything already."""
    ones = b"1" * (1 << 24)
    deflater = zlib.compressobj(9, zlib.DEFLATED, 31)
    first = deflater.compress(b"x\n" + ones) + deflater.flush(zlib.Z_FULL_FLUSH)
    again = deflater.compress(ones) + deflater.flush(zlib.Z_FULL_FLUSH)  # the same bytes each time
    path.write_bytes(first + again * (pieces - 1) + deflater.flush()[:-8] + bytes(8))


def test_a_gzip_line_inflating_to_gigabytes_fails_on_max_line_bytes_without_inflating_it(tmp_path):
    path = tmp_path / "bomb.csv.gz"
    _gzip_of_a_line_without_end(path, 140)  # 2.3 MB, 2.2 GiB of text
    said = _open_in_child(path)
    _assert_refused(said, "ParseError", "bomb.csv.gz", "line 2", "max_line_bytes = 67108864")


@pytest.mark.parametrize("kind", ["gzip", "xz", "bzip2"])
def test_compressed_text_comes_in_pieces_of_a_block_however_far_it_expands(tmp_path, kind):
    import bz2
    import lzma

    from lstm_data.io.plumbing.byte_blocks import BlockReader

    text = b"x\n" + b"1" * (16 << 20)
    compress = {"gzip": lambda d: zlib.compress(d, 1, wbits=31), "xz": lambda d: lzma.compress(d, preset=0),
                "bzip2": bz2.compress}[kind]
    path = tmp_path / "long.csv.z"
    path.write_bytes(compress(text))
    assert path.stat().st_size < 100_000  # read by the reader in one raw chunk
    with BlockReader(path, block_size=1 << 16) as reader:
        sizes = [len(block) for block in reader]
    assert sum(sizes) == len(text)
    assert max(sizes) <= 4 << 16, max(sizes)


# --- CSV: a header of many columns --------------------------------------------------------------------

def _wide(path: Path, n: int) -> Path:
    path.write_text(",".join(f"c{i}" for i in range(n)) + "\n" + ",".join("1" for _ in range(n)) + "\n")
    return path


def test_a_header_of_more_columns_than_max_columns_is_refused_before_any_row(tmp_path):
    said = _open_in_child(_wide(tmp_path / "wide.csv", 100_000))
    _assert_refused(said, "ParseError", "wide.csv", "line 1", "100,000 columns", "max_columns = 10,000")


def test_max_columns_is_an_option(tmp_path):
    import lstm_data
    from lstm_data.errors import ParseError

    path = _wide(tmp_path / "wide.csv", 300)
    with pytest.raises(ParseError, match=r"300 columns, more than max_columns = 299.*line 1"):
        lstm_data.open(path, max_columns=299)
    quoted = tmp_path / "quoted.csv"
    quoted.write_text('"a,b",c,d\n1,2,3\n')  # a quoted separator is not a column
    assert len(lstm_data.open(quoted, max_columns=3).scalar_names) == 3
    with pytest.raises(ParseError, match="3 columns, more than max_columns = 2"):
        lstm_data.open(quoted, max_columns=2)
    assert len(lstm_data.open(path, max_columns=300).scalar_names) == 300


# --- HDF5: declared shapes ----------------------------------------------------------------------------

def test_an_hdf5_dataset_declaring_1e11_rows_it_does_not_store_is_refused_unallocated(tmp_path):
    h5py = pytest.importorskip("h5py")
    path = tmp_path / "declared.h5"
    with h5py.File(path, "w") as fh:  # 2 KB on disk: every chunk unwritten reads as the fill value
        fh.create_dataset("x", shape=(10**11,), dtype="f4", chunks=(1024,), fillvalue=0)
    assert path.stat().st_size < 10_000
    said = _open_in_child(path)
    _assert_refused(said, "FormatError", "declared.h5", "dataset 'x'", "400,000,000,000 bytes",
                    "stores 0 bytes")


def test_a_nova_table_resized_to_1e11_rows_is_refused_unallocated(tmp_path):
    h5py = pytest.importorskip("h5py")
    from tests.nova_files import make_tables, write_nova

    path = write_nova(tmp_path / "nova.h5", make_tables(50))
    with h5py.File(path, "r+") as fh:
        table = next(iter(fh))
        for column in fh[table].values():
            column.resize(10**11, axis=0)
    said = _open_in_child(path)
    _assert_refused(said, "FormatError", "nova.h5", f"dataset '{table}/", "declares shape (100000000000, 1)")
