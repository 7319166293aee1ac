"""Reader benchmarks: the CSV reader (plain and ``.csv.xz``), then the file formats.

Stages and same-run ratios (floors in ``floors.toml``):

``csv``
    Peers read the plain numeric CSV (:func:`write_plain_numeric`: the token mix of
    :attr:`BenchData.csv`, one number per cell), since none parses a quoted list cell
    into numbers; ours reads the NOvA-like CSV itself. Peers and limits:
    :mod:`bench.csv_peers` (polars is skipped, with a note, when not installed).

    * ``read_csv vs pandas plain numeric``: ``pandas.read_csv`` (C engine, default
      float parser, ``dtype=float32``, ``mode.max_threads=1``) over our read with
      ``threads=1`` (higher is better);
    * ``read_csv threads=1 vs pyarrow.csv 1 thread ...``, ``... vs polars 1 thread ...``:
      the same against ``pyarrow.csv.read_csv`` (``use_threads=False``) and polars
      (``POLARS_MAX_THREADS=1``, every column ``Float32``, in a worker process);
    * ``read_csv threads=all vs pandas threads=all ...``, ``... vs polars threads=all
      ...``, ``read_csv vs pyarrow.csv plain numeric``: every core on both sides (the
      timings name the thread counts);
    * ``read_csv threads=1 / parse-only loop (time)`` and ``memcpy MB/s / read_csv
      threads=1 MB/s``: how far one thread of ours is from its limits, our kernel
      parsing the text already in memory and a one-thread copy of the text (both
      timed per byte of the NOvA-like CSV, MB/s printed beside ours);
    * ``read_csv threads=all vs threads=1``: our read on every core over our read on
      one (not judged when the machine itself does not scale ``np.sort``, or two whole
      one-thread reads run at once, ``MIN_CEILING`` on 2 threads);
    * ``two 1-thread reads at once / one (same-run ceiling)``: what the machine gives
      this workload on 2 cores right now (two independent one-thread reads of the file
      on two threads, over one), and ``... / same-run ceiling``: our scaling over it.
    * ``read_csv threads=all vs pandas plain numeric``: all our cores against one of pandas;
    * ``read_csv vs lstm_ee path``: ``pandas.read_csv`` plus one
      ``[float(y) for y in s.split(',')]`` per cell, over our read (every core);
    * ``peak RSS / (1.5 x columnar + 64 MB)``: ``VmHWM`` of a fresh process that
      reads the CSV, over its memory budget (lower is better).
``csv_xz``
    * ``read .csv.xz / xz -dc``: our read of the multi-block ``.csv.xz`` (``xz -T2``)
      over ``xz -dc FILE > /dev/null`` (lower is better): its blocks decompress on
      every core and the parsing hides behind them;
    * ``read .csv.gz / gzip -dc``: the same for ``gzip -6`` and ``gzip -dc``: one
      thread inflates, the others parse.

The ratios that count on a second core (all cores vs one, vs the lstm_ee path,
vs the one-thread decompressors) are not judged when ``np.sort`` does not scale
``MIN_CEILING`` on 2 threads right before or after them (a loaded machine).
``formats``
    HDF5 (lstm_ee layout) and zarr opens: :mod:`bench.formats`.

A stage module of the suite: ``run(quick, seed, data) -> Report``.
"""
from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Callable

import numpy as np

from lstm_data._util.cores import available_cores
from lstm_data.io.csv.reader import read_csv

from bench import csv_peers, formats
from bench.ceiling import sort_scaling, waive_without_two_cores
from bench.data import BenchData
from bench.memory import fresh_process_peak
from bench.timing import Report, interleaved_medians

__all__ = ["run", "lstm_ee_read", "peak_rss", "write_plain_numeric"]

STAGE_CSV = "csv"
STAGE_XZ = "csv_xz"
#: numbers per row of the plain numeric CSV
PLAIN_WIDTH = 50
MB = 1e6


def write_plain_numeric(src: Path, dst: Path, width: int = PLAIN_WIDTH) -> None:
    """Write every number text of ``src`` (a CSV with quoted lists) one per cell, ``width`` a row."""
    pending: list[bytes] = []
    with open(src, "rb") as fin, open(dst, "wb") as out:
        fin.readline()
        out.write(b",".join(b"c%d" % i for i in range(width)) + b"\n")
        for line in fin:
            pending += [t for t in line.replace(b'"', b",").strip().split(b",") if t]
            if len(pending) >= 64 * width:
                cut = len(pending) - len(pending) % width
                out.write(b"".join(b",".join(pending[i:i + width]) + b"\n"
                                   for i in range(0, cut, width)))
                del pending[:cut]
        for i in range(0, len(pending), width):
            row = pending[i:i + width]
            out.write(b",".join(row + [b""] * (width - len(row))) + b"\n")  # NaN-padded


def plain_numeric_csv(data: BenchData) -> Path:
    """The cached plain numeric CSV of ``data.csv``."""
    return data.cached("_plain.csv", lambda tmp: write_plain_numeric(data.csv, tmp))


def lstm_ee_read(path: Path) -> dict:
    """lstm_ee's path: ``pandas.read_csv``, then one Python float per number per cell."""
    import pandas as pd

    frame = pd.read_csv(path)
    out = {}
    for name in frame.columns:
        column = frame[name]
        if pd.api.types.is_numeric_dtype(column):
            out[name] = column.to_numpy(np.float32)
        else:
            out[name] = [np.array([float(y) for y in s.split(",")], dtype=np.float32)
                         if isinstance(s, str) else np.zeros(0, np.float32) for s in column]
    return out


def peak_rss(path: Path) -> tuple[int, int] | None:
    """``(peak RSS bytes, columnar bytes)`` of a fresh process reading the CSV ``path``."""
    return fresh_process_peak(path, "lstm_data.io.csv.reader:read_csv")


def _decompress(tool: str, path: Path) -> None:
    with open(os.devnull, "wb") as sink:
        subprocess.run([tool, "-dc", str(path)], stdout=sink, check=True)


def csv_gz(data: BenchData) -> Path:
    """The cached ``gzip -6`` of ``data.csv`` (the gzip tool when present, else :mod:`gzip`)."""
    def build(tmp: Path) -> None:
        if shutil.which("gzip"):
            with open(tmp, "wb") as out:
                subprocess.run(["gzip", "-6", "-c", str(data.csv)], stdout=out, check=True)
        else:
            import gzip
            with open(data.csv, "rb") as fin, gzip.open(tmp, "wb", compresslevel=6) as fout:
                shutil.copyfileobj(fin, fout, 1 << 20)
    return data.cached(".csv.gz", build)


def _two_cores() -> float:
    """How np.sort scales on 2 threads right now (0 with one core): the ratios that
    count on a second core are not judged below ``MIN_CEILING``."""
    return sort_scaling() if available_cores() >= 2 else 0.0


def _bracketed(slow: Callable[[], object], ours: Callable[[], object]) -> tuple[float, list[float]]:
    """Seconds of one ``slow()`` call, and of one ``ours()`` call right before and right after it."""
    seconds = []
    for fn in (ours, slow, ours):
        t0 = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - t0)
    return seconds[1], [seconds[0], seconds[2]]


def _csv_stage(report: Report, data: BenchData, quick: bool) -> None:
    rows, csv_path, plain = data.n_rows, data.csv, plain_numeric_csv(data)
    size, plain_size = csv_path.stat().st_size, plain.stat().st_size
    cores = available_cores()
    cases: dict[str, Callable[[], object]] = {
        "ours": lambda: read_csv(csv_path),
        "ours 1 thread": lambda: read_csv(csv_path, threads=1),
        "pandas": csv_peers.pandas_read(plain, 1),
        "pandas all": csv_peers.pandas_read(plain, None),
        "parse-only": csv_peers.parse_only_case(csv_path),
        "memcpy": csv_peers.memcpy_case(csv_path)}
    for key, threads in (("pyarrow 1", False), ("pyarrow", True)):
        job = csv_peers.pyarrow_read(plain, threads)
        if job is not None:
            cases[key] = job
    with ExitStack() as stack:
        if csv_peers.PolarsWorker.available():
            cases["polars 1"] = stack.enter_context(csv_peers.PolarsWorker(plain, 1))
            cases["polars all"] = stack.enter_context(csv_peers.PolarsWorker(plain, cores))
        pool = stack.enter_context(ThreadPoolExecutor(2)) if cores >= 2 else None
        if pool is not None:  # the workload's own ceiling: two whole one-thread reads at once
            cases["two 1-thread reads at once"] = lambda: list(pool.map(
                lambda _: read_csv(csv_path, threads=1), range(2)))
        before = _two_cores()
        t = interleaved_medians(cases, repeats=5 if quick else 7, warmup=1)
        after = _two_cores()
    pandas_all = csv_peers.pandas_threads()
    report.time(STAGE_CSV, f"read_csv threads={cores} (NOvA-like CSV)", t["ours"], items=rows,
                nbytes=size, ours=True)
    report.time(STAGE_CSV, "read_csv threads=1 (NOvA-like CSV)", t["ours 1 thread"], items=rows,
                nbytes=size, ours=True)
    report.time(STAGE_CSV, "limit: parse-only loop, 1 thread (in memory)", t["parse-only"],
                nbytes=size)
    report.time(STAGE_CSV, "limit: memcpy of the text, 1 thread", t["memcpy"], nbytes=size)
    report.time(STAGE_CSV, "pandas.read_csv 1 thread (plain numeric CSV)", t["pandas"],
                items=rows, nbytes=plain_size)
    report.time(STAGE_CSV, f"pandas.read_csv {pandas_all} threads (plain numeric CSV)",
                t["pandas all"], items=rows, nbytes=plain_size)
    report.ratio(STAGE_CSV, "read_csv vs pandas plain numeric", t["pandas"] / t["ours 1 thread"])
    report.ratio(STAGE_CSV, "read_csv threads=1 / parse-only loop (time)",
                 t["ours 1 thread"] / t["parse-only"], kind="max")
    report.ratio(STAGE_CSV, "memcpy MB/s / read_csv threads=1 MB/s",
                 t["ours 1 thread"] / t["memcpy"], kind="max")
    scaling = t["ours 1 thread"] / t["ours"]
    ceilings = {"np.sort": min(before, after)}
    if pool is not None:
        ceiling = 2 * t["ours 1 thread"] / t["two 1-thread reads at once"]
        ceilings["two one-thread reads"] = ceiling
        report.ratio(STAGE_CSV, "two 1-thread reads at once / one (same-run ceiling)", ceiling)
        report.ratio(STAGE_CSV, "read_csv threads=all vs threads=1 / same-run ceiling",
                     scaling / ceiling)
    waive_without_two_cores(report.ratio(STAGE_CSV, "read_csv threads=all vs threads=1", scaling),
                            ceilings)
    report.ratio(STAGE_CSV, "read_csv threads=all vs pandas plain numeric", t["pandas"] / t["ours"])
    waive_without_two_cores(report.ratio(
        STAGE_CSV, "read_csv threads=all vs pandas threads=all plain numeric",
        t["pandas all"] / t["ours"]), ceilings)
    for key, label, peer in (("pyarrow 1", "1 thread", "pyarrow.csv"),
                             ("polars 1", "1 thread", "polars"),
                             ("pyarrow", f"{cores} threads", "pyarrow.csv"),
                             ("polars all", f"{cores} threads", "polars")):
        if key not in t:
            continue
        report.time(STAGE_CSV, f"{peer}.read_csv {label} (plain numeric CSV)", t[key],
                    items=rows, nbytes=plain_size)
        if label == "1 thread":
            report.ratio(STAGE_CSV, f"read_csv threads=1 vs {peer} 1 thread plain numeric",
                         t[key] / t["ours 1 thread"])
        elif peer == "pyarrow.csv":  # the name of the all-cores ratio predates the others
            report.ratio(STAGE_CSV, "read_csv vs pyarrow.csv plain numeric", t[key] / t["ours"])
        else:
            waive_without_two_cores(report.ratio(
                STAGE_CSV, "read_csv threads=all vs polars threads=all plain numeric",
                t[key] / t["ours"]), ceilings)
    if "polars 1" not in t:
        print("csv: polars is not installed: its rows are skipped (pip install polars)")

    # The slow legacy path is timed once (after a warm call in a full run), between two
    # more reads of ours: a burst of load on the shared machine slows our two-thread
    # reader more than the one-thread legacy path, so the ratio is taken against the
    # median of our main time and the reads right around the legacy one.
    if not quick:
        lstm_ee_read(csv_path)
    legacy, around = _bracketed(lambda: lstm_ee_read(csv_path), cases["ours"])
    report.time(STAGE_CSV, "lstm_ee path (pandas + per-cell float())", legacy, items=rows,
                nbytes=size)
    waive_without_two_cores(report.ratio(STAGE_CSV, "read_csv vs lstm_ee path",
                                         legacy / statistics.median([t["ours"], *around])),
                            min(after, _two_cores()))

    peak = peak_rss(csv_path)
    if peak is not None:
        rss, nbytes = peak
        report.ratio(STAGE_CSV, "peak RSS / (1.5 x columnar + 64 MB)",
                     rss / (1.5 * nbytes + 64 * MB), kind="max")


def _xz_stage(report: Report, data: BenchData, quick: bool) -> None:
    size = data.csv.stat().st_size
    for tool, path in (("xz", data.csv_xz if shutil.which("xz") else None),
                       ("gzip", csv_gz(data) if shutil.which("gzip") else None)):
        if path is None:
            continue
        before = _two_cores()
        t = interleaved_medians({"ours": lambda p=path: read_csv(p),
                                 tool: lambda p=path, x=tool: _decompress(x, p)},
                                repeats=3 if quick else 5, warmup=1)
        after = _two_cores()
        suffix = ".csv.xz" if tool == "xz" else ".csv.gz"
        report.time(STAGE_XZ, f"read_csv ({suffix})", t["ours"], items=data.n_rows, nbytes=size,
                    ours=True)
        report.time(STAGE_XZ, f"{tool} -dc > /dev/null", t[tool], nbytes=size)
        waive_without_two_cores(report.ratio(STAGE_XZ, f"read {suffix} / {tool} -dc",
                                             t["ours"] / t[tool], kind="max"), min(before, after))


#: fewest rows of the CSV stages (quick runs included)
QUICK_CSV_ROWS = 50_000


def run(quick: bool = False, seed: int = 0, data: BenchData | None = None) -> Report:
    """Measure the ``csv``, ``csv_xz`` and ``formats`` stages on ``data`` (generated if None)."""
    data = data if data is not None else BenchData(quick=quick, seed=seed)
    # A reader's fixed costs (thread start, plan, first page faults) weigh on a
    # small file, where the floors were set for ~100 MB: quick runs read at least
    # QUICK_CSV_ROWS rows.
    text = data if data.n_rows >= QUICK_CSV_ROWS else BenchData(
        n_rows=QUICK_CSV_ROWS, seed=data.seed, root=data.root)
    report = Report()
    _csv_stage(report, text, quick)
    _xz_stage(report, text, quick)
    report.merge(formats.run(quick=quick, seed=seed, data=data))
    return report
