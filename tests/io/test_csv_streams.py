"""Named pipes and standard input are read as CSV streams; devices and sockets are refused."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading

import numpy as np
import pytest

import lstm_data
from lstm_data.data import synthetic
from lstm_data.errors import FormatError
from lstm_data.io.dispatch import detect_format
from tests.helpers import assert_same_dataset, gzip_fast, xz_fast

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")

TIMEOUT = 60  # a hang fails the test instead of stalling the run
ROWS = 1000  # about 1 MB: many times a pipe's buffer


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    path = tmp_path_factory.mktemp("streams") / "ev.csv"
    synthetic.write_csv(path, n_rows=ROWS, seed=11)
    return path, lstm_data.open(path)


def _feed(fifo, data: bytes) -> threading.Thread:
    def write():
        with open(fifo, "wb") as fh:
            fh.write(data)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("pack", [bytes, gzip_fast, xz_fast], ids=["plain", "gzip", "xz"])
@pytest.mark.parametrize("threads", [1, 2])
def test_open_reads_a_named_pipe(table, tmp_path, pack, threads):
    path, ref = table
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    writer = _feed(fifo, pack(path.read_bytes()))
    assert detect_format(fifo) == "csv"  # without reading from it
    ds = lstm_data.open(fifo, threads=threads)
    writer.join(TIMEOUT)
    assert_same_dataset(ds, ref)


def _cli(args, stdin_path, tmp_path):
    with open(stdin_path, "rb") as fh:
        return subprocess.run([sys.executable, "-m", "lstm_data", *args], stdin=fh, cwd=tmp_path,
                              capture_output=True, timeout=TIMEOUT, env={**os.environ, "LSTM_DATA_NO_PROGRESS": "1"})


def test_convert_from_stdin_pipe(table, tmp_path):
    path, ref = table
    cat = subprocess.Popen(["cat", str(path)], stdout=subprocess.PIPE)
    out = subprocess.run([sys.executable, "-m", "lstm_data", "convert", "-", str(tmp_path / "o.zarr"), "-q"],
                         stdin=cat.stdout, capture_output=True, timeout=TIMEOUT)
    cat.wait(TIMEOUT)
    assert out.returncode == 0, out.stderr.decode()
    assert_same_dataset(lstm_data.open(tmp_path / "o.zarr"), ref)


def test_inspect_from_stdin_gzip(table, tmp_path):
    path, ref = table
    (tmp_path / "ev.csv.gz").write_bytes(gzip_fast(path.read_bytes()))
    out = _cli(["inspect", "-", "--json", "--no-stats"], tmp_path / "ev.csv.gz", tmp_path)
    assert out.returncode == 0, out.stderr.decode()
    assert f'"rows": {ROWS}'.encode() in out.stdout


def test_a_stream_whose_later_rows_change_the_plan(tmp_path):
    """A pipe is read once: columns are decided from all of it (no second pass)."""
    rows = ["a,p.x"] + [f"{i},{i}" for i in range(150000)] + ['7,"1,2"']
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    writer = _feed(fifo, ("\n".join(rows) + "\n").encode())
    ds = lstm_data.open(fifo)
    writer.join(TIMEOUT)
    assert ds.groups == {"p": ["p.x"]} and np.diff(ds.ragged("p")[1])[-1] == 2


@pytest.mark.parametrize("device", ["/dev/null", "/dev/zero"])
def test_character_devices_are_refused(device):
    if not os.path.exists(device):
        pytest.skip(f"no {device}")
    with pytest.raises(FormatError, match="character device"):
        lstm_data.open(device)


def test_sockets_are_refused(tmp_path):
    sock = socket.socket(socket.AF_UNIX)
    path = tmp_path / "s.sock"
    try:
        sock.bind(str(path))
        with pytest.raises(FormatError, match="socket"):
            lstm_data.open(path)
    finally:
        sock.close()


def test_terminal_stdin_is_refused(tmp_path):
    import pty

    main, secondary = pty.openpty()
    try:
        out = subprocess.run([sys.executable, "-m", "lstm_data", "inspect", "-"], stdin=secondary,
                             capture_output=True, timeout=TIMEOUT)
    finally:
        os.close(main)
        os.close(secondary)
    assert out.returncode != 0 and b"terminal" in out.stderr
