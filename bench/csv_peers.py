"""The CSV stage's peers and limits, each a zero-argument callable for :func:`interleaved_medians`.

Peers read the plain numeric CSV (the bench CSV's number texts, one per cell: see
:func:`bench.readers.write_plain_numeric`), since none of them parses a quoted list
cell into numbers; each is pinned to one thread, and again given every core:

* pandas: ``read_csv`` (C engine, ``dtype=float32``) under the option
  ``mode.max_threads`` (pandas 3.1 and later; earlier pandas reads on one thread);
* pyarrow: ``pyarrow.csv.read_csv`` with ``use_threads`` off or on;
* polars: ``read_csv`` (every column ``Float32``) in a worker process started with
  ``POLARS_MAX_THREADS`` (polars sizes its pool once, at import). The worker times
  its own read and sends the seconds back, so the pipe is not counted; it is asked
  in turn with the other cases, so every case sees the same load.

Limits: ``memcpy`` (``np.copyto`` of the text, one thread) and the parse-only loop
(our kernel's ``feed`` of the whole text, already in memory: no file, no plan, no
arrays made), both per byte of the NOvA-like CSV.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

__all__ = ["pandas_read", "pyarrow_read", "PolarsWorker", "memcpy_case", "parse_only_case",
           "pandas_threads"]

_POLARS_WORKER = r"""
import sys, time
import polars as pl
path = sys.argv[1]
with open(path) as fh:
    names = fh.readline().strip().split(",")
schema = {name: pl.Float32 for name in names}
print("ready", flush=True)
for _ in sys.stdin:
    t0 = time.perf_counter()
    pl.read_csv(path, schema=schema)
    print(time.perf_counter() - t0, flush=True)
"""


def pandas_threads() -> int:
    """The thread count pandas uses with ``mode.max_threads=None`` (1 before pandas 3.1)."""
    import pandas as pd

    try:
        pd.get_option("mode.max_threads")
    except KeyError:  # pandas' OptionError derives from KeyError
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(cores, 6))


def pandas_read(path: Path, threads: int | None) -> Callable[[], object]:
    """``pd.read_csv(path, engine="c", dtype=float32)`` on ``threads`` (None: pandas' default)."""
    import pandas as pd

    try:
        pd.get_option("mode.max_threads")
        has_option = True
    except KeyError:
        has_option = False

    def job() -> object:
        if not has_option:
            return pd.read_csv(path, engine="c", dtype=np.float32)
        with pd.option_context("mode.max_threads", threads):
            return pd.read_csv(path, engine="c", dtype=np.float32)
    return job


def pyarrow_read(path: Path, threads: bool) -> Callable[[], object] | None:
    """``pyarrow.csv.read_csv(path)`` on one thread or pyarrow's pool; None without pyarrow."""
    try:
        import pyarrow.csv as pa_csv
    except ImportError:
        return None
    options = pa_csv.ReadOptions(use_threads=threads)
    return lambda: pa_csv.read_csv(path, read_options=options)


class PolarsWorker:
    """A process reading ``path`` with polars on ``threads`` threads whenever it is called.

    Calling returns after the read; :attr:`seconds` holds the worker's own timings.
    Use as a context manager (the process ends on exit).
    """

    def __init__(self, path: Path, threads: int) -> None:
        env = dict(os.environ, POLARS_MAX_THREADS=str(threads))
        self._proc = subprocess.Popen([sys.executable, "-c", _POLARS_WORKER, str(path)],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                      env=env)
        if self._proc.stdout is None or self._proc.stdout.readline().strip() != "ready":
            self.close()
            raise RuntimeError("the polars worker did not start")
        self.seconds: list[float] = []

    @staticmethod
    def available() -> bool:
        """Whether polars is installed (checked without importing it here)."""
        import importlib.util

        return importlib.util.find_spec("polars") is not None

    def __call__(self) -> None:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write("read\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError("the polars worker died")
        self.seconds.append(float(line))

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()

    def __enter__(self) -> "PolarsWorker":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def memcpy_case(path: Path) -> Callable[[], object]:
    """One-thread copy of the whole text (in memory) to another buffer: the bandwidth limit."""
    src = np.frombuffer(path.read_bytes(), np.uint8)
    dst = np.empty_like(src)
    return lambda: np.copyto(dst, src)


def parse_only_case(path: Path) -> Callable[[], object]:
    """Our kernel alone: a fresh parser of the reader's plan ``feed``-ing the text in memory."""
    from lstm_data import kernels
    from lstm_data.io.csv.head import parse_sample, read_head
    from lstm_data.io.csv.plan import ParserOptions, declared_plan

    head = read_head(str(path), None)
    options = ParserOptions(dtype=np.dtype(np.float32), sep=head.sep, list_sep=",",
                            max_line=1 << 20)
    plan = parse_sample(declared_plan(head.names, None), head, options).plan
    text = path.read_bytes()
    body = memoryview(text)[head.end:]

    def job() -> object:
        parser = kernels.CsvBlockParser(plan.names, plan.kinds, plan.groups, **options)
        parser.feed(body, final=True)
        return parser
    return job


def timed(fn: Callable[[], object]) -> float:
    """Seconds of one call."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0
