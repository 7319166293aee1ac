"""Integers the float dtype changes are never changed silently by the CSV readers."""
from __future__ import annotations

import gzip
import warnings

import numpy as np
import pytest

import lstm_data
from lstm_data.io.ours.convert import convert_streaming
from lstm_data.io.csv.precision import PrecisionWarning
from lstm_data.io.csv.reader import read_csv


def _write(path, rows=2000, evt_at=1500):
    lines = ["run,evt,calE,png.x"]
    for i in range(rows):
        evt = 16777217 if i == evt_at else i
        lines.append(f'7,{evt},{i / 8},"{i / 4},{i / 2}"')
    text = "\n".join(lines) + "\n"
    if str(path).endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return evt_at + 2  # its line


@pytest.mark.parametrize("name", ["ev.csv", "ev.csv.gz"])
@pytest.mark.parametrize("threads", [1, 2])
def test_float32_warns_once_naming_column_line_and_value(tmp_path, name, threads):
    path = tmp_path / name
    line = _write(path)
    with pytest.warns(PrecisionWarning) as record:
        ds = read_csv(path, threads=threads, block_bytes=4096)
    ours = [w for w in record if issubclass(w.category, PrecisionWarning)]
    assert len(ours) == 1
    message = str(ours[0].message)
    assert "'evt'" in message and f"line {line}:" in message and "16777217 reads as 16777216" in message
    assert str(path) in message and "float64" in message
    assert ds.scalar("evt")[1500] == 16777216.0


def test_float64_keeps_them_exact_without_a_word(tmp_path):
    path = tmp_path / "ev.csv"
    _write(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrecisionWarning)
        ds = lstm_data.open(path, dtype=np.float64)
    assert ds.scalar("evt")[1500] == 16777217


def test_several_files_name_the_file(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    _write(a, evt_at=10**9)  # none
    line = _write(b, rows=50, evt_at=40)
    with pytest.warns(PrecisionWarning, match=rf"b\.csv: column 'evt' .*line {line}:"):
        read_csv([a, b])


def test_streaming_convert_warns(tmp_path):
    path = tmp_path / "ev.csv"
    _write(path)
    with pytest.warns(PrecisionWarning, match="'evt'"):
        convert_streaming([str(path)], tmp_path / "out.zarr", block_bytes=1 << 14)


def test_ordinary_floats_stay_silent(tmp_path):
    path = tmp_path / "ev.csv"
    path.write_text("a,b\n16777216,1e30\n123456789.5,-16777216\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrecisionWarning)
        read_csv(path)
