"""The CSV path from ``lstm_data.open`` to the parse, traced: each header located once, each byte
of text parsed once when the plan's sample is the whole file.

The tracer (``sys.setprofile``, on every thread) sees the block parser's ``feed`` as a Python call,
so the parser is the kernels' Python twin (the same class the compiled one is checked against).
"""
from __future__ import annotations

import sys
import threading
import warnings

import numpy as np
import pytest

import lstm_data
from lstm_data import kernels
from lstm_data.io.csv import head as csv_head
from lstm_data.io.csv import plan as csv_plan
from lstm_data.kernels._py.csvblock import CsvBlockParser as TwinParser
from tests.helpers import assert_same_dataset, gzip_fast, xz_fast

_COMPRESS = {".csv": lambda b: b, ".csv.gz": gzip_fast, ".csv.xz": xz_fast}


def _text(rows: int, seed: int = 0) -> tuple[bytes, int]:
    """CSV text with scalars, a prong group and an integer float32 changes; and its header's length."""
    rng = np.random.default_rng(seed)
    header = "evt,png.calE,png.dir,vtx.x\n"
    lines = [header]
    for i in range(rows):
        k = int(rng.integers(0, 4))
        a = ",".join(f"{v:.4f}" for v in rng.random(k))
        b = ",".join(f"{v:.3f}" for v in rng.random(k))
        evt = 16777217 + i if i == rows // 2 else i
        lines.append(f'{evt},"{a}","{b}",{rng.random():.5f}\n')
    return "".join(lines).encode(), len(header)


class _Trace:
    """Header locations and bytes fed to block parsers while ``lstm_data.open`` runs."""

    def __init__(self) -> None:
        self.headers = 0
        self.fed = 0
        self._found: dict[int, object] = {}
        self._lock = threading.Lock()

    def __call__(self, frame, event, arg):
        code = frame.f_code
        if event == "return" and code is csv_plan.HeaderScan.add.__code__:
            scan = frame.f_locals["self"]
            if arg is not None and id(scan) not in self._found:  # a header located (once per scan)
                with self._lock:
                    self._found[id(scan)] = scan
                    self.headers += 1
            return
        if event != "call":
            return
        if code is csv_plan.header_bounds.__code__:
            with self._lock:
                self.headers += 1
        elif code is TwinParser.feed.__code__:
            with self._lock:
                self.fed += memoryview(frame.f_locals["data"]).nbytes

    def open(self, paths, **options):
        sys.setprofile(self)
        threading.setprofile(self)
        try:
            return lstm_data.open(paths, **options)
        finally:
            sys.setprofile(None)
            threading.setprofile(None)


@pytest.fixture
def twin(monkeypatch):
    monkeypatch.setattr(kernels, "CsvBlockParser", TwinParser)


@pytest.mark.parametrize("suffix", list(_COMPRESS))
@pytest.mark.parametrize("threads", [1, 2])
def test_header_located_once_and_text_parsed_once(tmp_path, twin, suffix, threads):
    text, header = _text(300)
    path = tmp_path / f"x{suffix}"
    path.write_bytes(_COMPRESS[suffix](text))
    trace = _Trace()
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        ds = trace.open(path, threads=threads)
    assert len(ds) == 300 and ds.groups == {"png": ["png.calE", "png.dir"]}
    assert trace.headers == 1
    assert trace.fed == len(text) - header  # the sample's parse is the file's


def test_each_file_header_located_once(tmp_path, twin):
    text, header = _text(200)
    paths = [tmp_path / "a.csv", tmp_path / "b.csv.gz"]
    paths[0].write_bytes(text)
    paths[1].write_bytes(gzip_fast(text))
    trace = _Trace()
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        ds = trace.open([str(p) for p in paths], threads=1)
    assert len(ds) == 400
    assert trace.headers == 2


@pytest.mark.parametrize("suffix", [".csv", ".csv.xz"])
def test_parsed_sample_reads_as_the_full_parse(tmp_path, monkeypatch, suffix):
    # the sample's parse kept as the file's gives what parsing the file again with the sample's plan gives:
    # values, groups, and the precision warning's line
    text, _ = _text(400, seed=1)
    path = tmp_path / f"x{suffix}"
    path.write_bytes(_COMPRESS[suffix](text))
    with pytest.warns(lstm_data.io.csv.precision.PrecisionWarning) as kept:
        whole = lstm_data.open(path, threads=1)
    monkeypatch.setattr(csv_head, "SAMPLE_SIZE", 2048)  # the sample is a part: the file is parsed
    for threads in (1, 2):
        with pytest.warns(lstm_data.io.csv.precision.PrecisionWarning) as again:
            assert_same_dataset(lstm_data.open(path, threads=threads), whole)
        assert [str(w.message) for w in again] == [str(w.message) for w in kept]
    assert "line 202" in str(kept[0].message)
