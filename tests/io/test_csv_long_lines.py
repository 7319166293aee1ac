"""A line longer than ``max_line_bytes`` is a ParseError naming the file and the line, from a plain file,
a compressed file or a pipe alike, without reading the rest of the line (a pipe's line may never end)."""
from __future__ import annotations

import bz2
import gzip
import lzma
import os
import threading
import tracemalloc

import numpy as np
import pytest

import lstm_data
from lstm_data.errors import ParseError
from lstm_data.io.csv.reader import read_csv

BOUND = 64 << 10
HEAD = b"a,b\n1,2\n3,4\n"
COMPRESS = {".csv": lambda b: b, ".csv.gz": gzip.compress, ".csv.xz": lzma.compress, ".csv.bz2": bz2.compress}


class _Pipe:
    """A named pipe fed by a thread: ``head``, then ``line`` repeated ``times`` times (then the end)."""

    def __init__(self, path, head: bytes, line: bytes, times: int) -> None:
        os.mkfifo(path)
        self.path, self.written = str(path), 0
        self.thread = threading.Thread(target=self._write, args=(head, line, times), daemon=True)
        self.thread.start()

    def _write(self, head: bytes, line: bytes, times: int) -> None:
        try:
            with open(self.path, "wb") as fh:
                fh.write(head)
                for _ in range(times):
                    fh.write(line)
                    self.written += len(line)
        except BrokenPipeError:  # the reader stopped: what the test wants
            pass

    def join(self) -> None:
        self.thread.join(timeout=30)


def _long_line(size: int) -> bytes:
    return b"5,\"" + b"1," * (size // 2) + b"2\"\n"


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("suffix", list(COMPRESS))
def test_a_line_past_the_bound_in_a_file_names_the_file_and_the_line(tmp_path, suffix, threads):
    path = tmp_path / f"x{suffix}"
    text = b"a,b\n" + b"1,2\n" * 5000 + _long_line(3 * BOUND) + b"7,8\n" * 10
    path.write_bytes(COMPRESS[suffix](text))
    with pytest.raises(ParseError) as info:
        read_csv(path, max_line_bytes=BOUND, threads=threads, block_bytes=16 << 10, schema={"b": ["b"]})
    assert info.value.file == str(path) and info.value.line == 5002
    assert f"max_line_bytes = {BOUND} bytes" in str(info.value)


@pytest.mark.parametrize("suffix", list(COMPRESS))
def test_lines_within_the_bound_read_as_without_it(tmp_path, suffix):
    path = tmp_path / f"x{suffix}"
    text = b"a,b\n" + b"1,2\n" * 50 + _long_line(BOUND - 16) + b"7,8\n"
    path.write_bytes(COMPRESS[suffix](text))
    bounded = read_csv(path, max_line_bytes=BOUND, block_bytes=4 << 10, schema={"b": ["b"]})
    free = read_csv(path, block_bytes=4 << 10, schema={"b": ["b"]})
    assert np.array_equal(bounded.scalar("a"), free.scalar("a")) and len(bounded) == 52
    assert np.array_equal(bounded.ragged("b")[0], free.ragged("b")[0])


@pytest.mark.parametrize("threads", [1, 2])
def test_a_pipe_whose_line_never_ends_is_stopped_at_the_bound(tmp_path, threads):
    pipe = _Pipe(tmp_path / "fifo", HEAD + b"5,\"", b"1," * 4096, times=10_000)  # 80 MB if read to the end
    with pytest.raises(ParseError) as info:
        lstm_data.open(pipe.path, max_line_bytes=BOUND, threads=threads, block_bytes=8 << 10)
    pipe.join()
    assert info.value.file == pipe.path and info.value.line == 4
    assert pipe.written < 100 * BOUND  # the rest of the line was never read


def test_a_pipe_whose_header_never_ends_is_stopped_at_the_bound(tmp_path):
    pipe = _Pipe(tmp_path / "fifo", b"a", b",b" * 4096, times=10_000)
    with pytest.raises(ParseError) as info:
        read_csv(pipe.path, max_line_bytes=BOUND, block_bytes=8 << 10)
    pipe.join()
    assert info.value.file == pipe.path and info.value.line == 1
    assert pipe.written < 100 * BOUND


def test_a_header_past_the_bound_in_a_gz_file(tmp_path):
    path = tmp_path / "x.csv.gz"
    path.write_bytes(gzip.compress(b",".join(b"c%d" % i for i in range(BOUND // 3)) + b"\n1\n"))
    with pytest.raises(ParseError) as info:
        read_csv(path, max_line_bytes=BOUND)
    assert info.value.file == str(path) and info.value.line == 1


def test_memory_held_for_a_line_that_never_ends_is_linear_in_the_bound(tmp_path):
    bound = 4 << 20
    pipe = _Pipe(tmp_path / "fifo", HEAD + b"5,\"", b"1," * 32768, times=2_000)  # 128 MB if read to the end
    tracemalloc.start()
    try:
        with pytest.raises(ParseError):
            read_csv(pipe.path, max_line_bytes=bound, block_bytes=256 << 10, threads=1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        pipe.join()
    assert peak < 2 * bound + (4 << 20), peak


def test_max_line_bytes_is_checked():
    for bad in (0, -5, 1.5, True):
        with pytest.raises(lstm_data.OptionError, match="max_line_bytes"):
            lstm_data.ReadOptions(max_line_bytes=bad)
