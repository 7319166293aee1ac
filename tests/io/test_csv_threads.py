"""read_csv on several threads: the one-thread dataset and errors, bit for bit.

Every input is read with ``threads=1`` and with 2 and 3 threads at many block
sizes (the size of the pieces the text is cut into), plain and compressed,
including multi-block ``.xz`` files whose blocks decompress on several threads.
A compressed file is parsed on ``threads - 1`` workers (one core inflates), so 3
threads is what parses it on 2 workers. The rule for multi-line quoted cells is
stated in :mod:`lstm_data.io.csv.parallel`.
"""
from __future__ import annotations

import bz2
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import lstm_data
from lstm_data import kernels
from lstm_data.data.synthetic import write_csv
from lstm_data.errors import FormatError, ParseError, SchemaError
from lstm_data.io.plumbing.byte_blocks import BlockReader
from lstm_data.io.csv.parallel import region_pieces
from lstm_data.io.csv.reader import read_csv
from tests.helpers import assert_same_dataset, gzip_fast, xz_fast

PURE = kernels.BACKEND == "python"
ROWS = 40 if PURE else 300
THREADS = (2, 3)
BLOCK_SIZES = [1, 97, 1000, 4099, 1 << 16] if PURE else [1, 13, 97, 1000, 4099, 30011, 1 << 16,
                                                          4 << 20]


def _xz_streams(data: bytes) -> bytes:
    """Several xz streams of one block each, cut mid-row (as concatenated .xz files are)."""
    step = len(data) // 3 + 1
    return b"".join(xz_fast(data[i:i + step]) for i in range(0, len(data), step))


COMPRESS = {".csv": lambda d: d, ".csv.gz": gzip_fast, ".csv.bz2": bz2.compress,
            ".csv.xz": xz_fast, ".streams.csv.xz": _xz_streams}


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    suffix = next(s for s in sorted(COMPRESS, key=len, reverse=True) if name.endswith(s))
    path = tmp_path / name
    path.write_bytes(COMPRESS[suffix](data))
    return path


@pytest.fixture(scope="module")
def events(tmp_path_factory) -> tuple[Path, bytes]:
    """A NOvA-like CSV with the realistic token mix, and its bytes."""
    path = tmp_path_factory.mktemp("threads") / "events.csv"
    write_csv(path, ROWS, seed=5, token_mix=True)
    return path, path.read_bytes()


def _errors_equal(path: Path, **options) -> None:
    """``read_csv`` raises the same error on one thread and on two, at every block size."""
    with pytest.raises((ParseError, SchemaError, FormatError)) as one:
        read_csv(path, threads=1, **options)
    for threads in THREADS:
        for block_size in BLOCK_SIZES:
            with pytest.raises(type(one.value)) as two:
                read_csv(path, threads=threads, block_bytes=block_size, **options)
            assert str(two.value) == str(one.value), (threads, block_size)
    return one.value


# -- same datasets -------------------------------------------------------------------------------
@pytest.mark.parametrize("suffix", list(COMPRESS))
def test_several_threads_equal_one_at_every_block_size(tmp_path, events, suffix):
    _, data = events
    path = _write(tmp_path, "e" + suffix, data)
    want = read_csv(path, threads=1)
    for threads in THREADS:
        for block_size in BLOCK_SIZES:
            assert_same_dataset(read_csv(path, threads=threads, block_bytes=block_size), want)


def test_float64_and_the_default_threads(tmp_path, events):
    path, _ = events
    want = read_csv(path, threads=1, dtype=np.float64)
    assert_same_dataset(read_csv(path, dtype=np.float64, block_bytes=1000), want)
    assert_same_dataset(lstm_data.open(path, threads=2, dtype=np.float64), want)


def _xz_block_count(path: Path) -> int:
    from lstm_data.io.plumbing.xz_blocks import (
        xz_blocks,  # here: a test on today's main fails alone
    )

    with open(path, "rb") as fh:
        return len(xz_blocks(fh))


def test_multi_block_xz_decodes_block_by_block(tmp_path, events):
    _, data = events
    path = _write(tmp_path, "e.streams.csv.xz", data)
    assert _xz_block_count(path) == 3
    for block_size in (1, 4099, 1 << 20):
        assert b"".join(BlockReader(path, block_size, threads=2)) == data


@pytest.mark.skipif(shutil.which("xz") is None, reason="needs the xz tool")
def test_xz_tool_blocks(tmp_path, events):
    plain, data = events
    path = tmp_path / "e.csv.xz"
    with open(path, "wb") as out:
        subprocess.run(["xz", "-c", "-T2", "--block-size=20KiB", str(plain)], stdout=out,
                       check=True)
    assert _xz_block_count(path) > 2
    assert b"".join(BlockReader(path, 1 << 20, threads=2)) == data
    assert_same_dataset(read_csv(path, threads=3, block_bytes=4099), read_csv(plain, threads=1))


def test_a_damaged_xz_block_is_a_format_error(tmp_path, events):
    _, data = events
    raw = bytearray(_xz_streams(data))
    raw[len(raw) // 2] ^= 0xFF
    path = tmp_path / "bad.csv.xz"
    path.write_bytes(bytes(raw))
    with pytest.raises(FormatError, match="xz") as info:
        read_csv(path, threads=2)
    assert info.value.file == str(path)


def test_gzip_members_and_crc(tmp_path, events):
    _, data = events
    half = len(data) // 2 + 7  # a member ends mid-row
    path = tmp_path / "m.csv.gz"
    path.write_bytes(gzip_fast(data[:half]) + gzip_fast(data[half:]) + b"\0" * 8)
    assert_same_dataset(read_csv(path, threads=3, block_bytes=97), read_csv(path, threads=1))
    raw = bytearray(gzip_fast(data))
    raw[-6] ^= 1  # the CRC32 of the text
    path.write_bytes(bytes(raw))
    for threads in (1, 3):
        with pytest.raises(FormatError, match="CRC32"):
            read_csv(path, threads=threads)


# -- multi-line quoted cells -----------------------------------------------------------------------
def _multiline_csv(rows: int) -> bytes:
    """Prong cells and a text column whose quoted cells hold newlines, one row in three."""
    lines = ["e,note,p.a,p.b"]
    for i in range(rows):
        note = f'"line {i}\n""quoted""\n, end"' if i % 3 == 0 else f"n{i}"
        cells = [f"{i / 7!r}", note, f'"{i},\n{i + 0.5}"', f'"{-i},{i * 1e-3!r}\n"']
        if i % 3 == 1:
            cells[2:] = ['"\n"', '""']  # no prongs (whitespace only)
        lines.append(",".join(cells))
    return ("\r\n".join(lines) + "\r\n").encode()


SCHEMA = {"groups": {"p": ["p.a", "p.b"]}, "scalars": ["e"]}


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz"])
def test_multi_line_quoted_cells(tmp_path, suffix):
    path = _write(tmp_path, "m" + suffix, _multiline_csv(ROWS))
    want = read_csv(path, threads=1, schema=SCHEMA)
    assert len(want) == ROWS and want.ragged("p")[1][-1] == 2 * (ROWS - (ROWS + 1) // 3)
    for threads in THREADS:
        for block_size in BLOCK_SIZES:
            assert_same_dataset(read_csv(path, threads=threads, block_bytes=block_size, schema=SCHEMA),
                                want)


def test_lines_stay_exact_after_multi_line_cells(tmp_path):
    data = _multiline_csv(ROWS) + b'1.0,x,"1,2","3,oops"\r\n'
    path = _write(tmp_path, "m.csv", data)
    error = _errors_equal(path, schema=SCHEMA)
    assert (error.line, error.row, error.token) == (data.count(b"\n"), ROWS, "oops")


# -- errors: the first in file order, exactly where one thread puts it -------------------------------
def _numbers_csv(rows: int, bad: dict[int, str]) -> bytes:
    lines = ["t,p.x,p.y"] + [bad.get(i, f'{i},"{i}.5,{i}.25","1e-{i % 30},{i}"')
                             for i in range(rows)]
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("bad, where", [
    ({150: '150,"1.5,x2","1,2"'}, dict(line=152, row=150, column=2, token="x2")),
    ({150: '150,"1.5,2"'}, dict(line=152, row=150)),  # too few fields
    ({150: '150,"1.5,2","1"'}, dict(line=152, row=150, variable="p.y")),  # group lengths differ
    ({299: '299,"1,2","3,4'}, dict(line=301, row=299)),  # unterminated at the end of the file
])
def test_error_in_a_later_block_names_its_exact_line(tmp_path, bad, where):
    path = _write(tmp_path, "bad.csv", _numbers_csv(300, bad))
    error = _errors_equal(path, schema={"groups": {"p": ["p.x", "p.y"]}})
    assert error.file == str(path)
    for key, value in where.items():
        assert getattr(error, key) == value


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz", ".csv.xz", ".streams.csv.xz"])
def test_the_first_error_wins_over_a_later_one_found_first(tmp_path, suffix):
    # an error at the end of one piece and one at the start of the next: the worker
    # of the second finishes first, but the first error in the file is the one raised
    bad = {i: f'{i},"{i},bad{i}","1,2"' for i in (120, 121, 200, 260)}
    path = _write(tmp_path, "bad" + suffix, _numbers_csv(300, bad))
    error = _errors_equal(path)
    assert (error.line, error.row, error.token) == (122, 120, "bad120")


def test_threads_argument(tmp_path, events):
    path, _ = events
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="threads"):
            read_csv(path, threads=bad)
    seen: list[tuple[int, int]] = []
    read_csv(path, threads=2, block_bytes=4099, progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (path.stat().st_size,) * 2
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_pieces_cover_the_text_at_newlines_and_shrink_at_the_end(threads):
    rng = np.random.default_rng(threads)
    text = b"".join(b"x" * int(n) + b"\n" for n in rng.integers(0, 3000, 8000))
    start, step = 17, 1 << 20
    pieces = list(region_pieces(len(text), start, step, text.find, threads))
    assert pieces[0][0][0] == start and pieces[-1] == ((pieces[-1][0][0], len(text)), True)
    assert not any(last for _, last in pieces[:-1])
    for ((_, end), _), ((begin, _), _) in zip(pieces, pieces[1:]):
        assert end == begin and text[end - 1:end] == b"\n"
    sizes = [end - begin for (begin, end), _ in pieces]
    assert max(sizes) < step + 3001
    if threads > 1:  # the tail is cut finer, so the workers finish together
        assert min(sizes[-2 * threads:-1]) < step // 2


@pytest.mark.parametrize("block_bytes", [0, -5, 1.5, True])
def test_block_bytes_must_be_positive(tmp_path, block_bytes):
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="block_bytes"):
        read_csv(path, block_bytes=block_bytes, threads=2)
