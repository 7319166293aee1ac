"""The CSV reader on dump shapes other than the bench's own: ours vs pandas, polars, pyarrow.

Each shape is a generated lstm_ee/NOvA-like dump (scalar cells, and quoted list cells
of one ``prong`` group) with its own token mix, widths, list lengths, empty cells and
line ends; the peers read the same number texts one per cell
(:func:`bench.readers.write_plain_numeric`, rows as wide as the dump's mean numbers
per row, the same line ends; empty cells are not numbers and are left out). Every
case runs on one thread: ours ``read_csv(threads=1)``, pandas under
``mode.max_threads=1``, ``pyarrow.csv`` without threads, polars in its own process
with ``POLARS_MAX_THREADS=1`` (:mod:`bench.csv_peers`), timed interleaved; a ratio
is the median over rounds of the peer's time over ours in the same round.

No floors: the shapes show where the reader is weaker than on the bench's own dump
(``python -m bench.csv_shapes --quick``; ``--only NAME`` for one shape).
"""
from __future__ import annotations

import sys
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from lstm_data.io.csv.reader import read_csv

from bench import csv_peers
from bench.data import BenchData
from bench.readers import write_plain_numeric
from bench.timing import Report, interleaved_samples, median_ratio

__all__ = ["SHAPES", "Shape", "write_shape", "files", "measure", "run", "table"]

STAGE = "csv_shapes"
MB = 1e6
#: the token spellings of real dumps: ROOT/C++ ``%g`` and ``%.6f``, Python's 17-digit
#: ``repr``, ``%.2E`` exponents, integers
FORMATS = ("g", "f6", "repr", "E", "int")


@dataclass(frozen=True)
class Shape:
    """One dump shape: columns, list lengths, tokens, empties, line ends."""

    name: str
    scalars: int  #: scalar columns
    lists: int  #: list columns (one group: every row's lists are as long)
    prongs: tuple[int, int]  #: list length range, inclusive
    tokens: tuple[str, ...]  #: spellings, drawn per token from these
    empty: float = 0.0  #: share of empty scalar cells
    crlf: bool = False
    negative: float = 0.5  #: share of negative values
    megabytes: float = 30.0  #: the dump's size (quick runs: half)


SHAPES = (
    Shape("mixed tokens 12s+6l", 12, 6, (0, 8), ("g", "f6", "repr")),
    Shape("exponents 8s+4l", 8, 4, (0, 6), ("g", "E"), negative=0.5),
    Shape("wide 200 cols ints CRLF", 190, 10, (0, 3), ("int", "g", "f6"), crlf=True),
    Shape("narrow 3 cols long lists", 1, 2, (100, 160), ("f6", "g")),
    Shape("short lists many empties", 20, 8, (0, 2), ("g", "f6"), empty=0.4),
    Shape("scalars only 30 cols", 30, 0, (0, 0), ("f6", "repr", "int")),
)


def _tokens(rng: np.random.Generator, n: int, spellings: tuple[str, ...],
            negative: float) -> list[str]:
    """``n`` number texts, each in one of ``spellings`` (drawn per token)."""
    mag = rng.standard_normal(n) * 10.0 ** rng.integers(-6, 6, n)
    mag = np.where(rng.random(n) < negative, -np.abs(mag), np.abs(mag))
    ints = rng.integers(-50000, 2_000_000, n)
    which = rng.integers(0, len(spellings), n)
    out: list[str] = []
    for v, i, k in zip(mag.tolist(), ints.tolist(), which.tolist()):
        s = spellings[k]
        if s == "g":
            out.append("%g" % v)
        elif s == "f6":
            out.append("%.6f" % v)
        elif s == "repr":
            out.append(repr(v))
        elif s == "E":
            out.append("%.2E" % v)
        else:
            out.append(str(i))
    return out


def write_shape(shape: Shape, path: Path, megabytes: float, seed: int = 0) -> None:
    """Write a dump of ``shape`` of about ``megabytes`` to ``path`` (our quoted-list form)."""
    rng = np.random.default_rng(seed)
    eol = "\r\n" if shape.crlf else "\n"
    names = [f"s{i}" for i in range(shape.scalars)] + [f"prong.v{j}" for j in range(shape.lists)]
    written = 0
    with open(path, "w", newline="") as out:
        out.write(",".join(names) + eol)
        while written < megabytes * MB:
            rows = 2000
            counts = rng.integers(shape.prongs[0], shape.prongs[1] + 1, rows) if shape.lists else \
                np.zeros(rows, np.int64)
            columns: list[list[str]] = []
            for _ in range(shape.scalars):
                cells = _tokens(rng, rows, shape.tokens, shape.negative)
                if shape.empty:
                    for i in np.flatnonzero(rng.random(rows) < shape.empty).tolist():
                        cells[i] = ""
                columns.append(cells)
            bounds = np.concatenate([[0], np.cumsum(counts)]).tolist()
            for _ in range(shape.lists):
                toks = _tokens(rng, bounds[-1], shape.tokens, shape.negative)
                columns.append(['"' + ",".join(toks[a:b]) + '"'
                                for a, b in zip(bounds[:-1], bounds[1:])])
            text = "".join(",".join(cells) + eol for cells in zip(*columns))
            out.write(text)
            written += len(text)


def _plain(shape: Shape, src: Path, dst: Path) -> None:
    """The peers' form of ``src``: its number texts one per cell, with its line ends."""
    with open(src, "rb") as fh:
        fh.readline()  # the header
        sample = [fh.readline() for _ in range(200)]
    per_row = np.mean([len([t for t in line.replace(b'"', b",").strip().split(b",") if t])
                       for line in sample])
    write_plain_numeric(src, dst, width=max(3, int(round(per_row))))
    if shape.crlf:
        text = dst.read_bytes().replace(b"\n", b"\r\n")
        dst.write_bytes(text)


def files(shape: Shape, data: BenchData, quick: bool) -> tuple[Path, Path]:
    """The cached dump of ``shape`` and its peers' form."""
    megabytes = shape.megabytes / 2 if quick else shape.megabytes
    key = "_shape_" + "".join(c if c.isalnum() else "_" for c in shape.name) + f"_{megabytes:g}"
    ours = data.cached(key + ".csv", lambda tmp: write_shape(shape, tmp, megabytes, data.seed))
    peers = data.cached(key + "_plain.csv", lambda tmp: _plain(shape, ours, tmp))
    return ours, peers


def measure(report: Report, shape: Shape, data: BenchData, quick: bool) -> None:
    """Time ours and every peer on ``shape``, interleaved; record ratios and MB/s."""
    ours_path, plain = files(shape, data, quick)
    cases: dict[str, Callable[[], object]] = {
        "ours": lambda: read_csv(ours_path, threads=1),
        "pandas": csv_peers.pandas_read(plain, 1)}
    arrow = csv_peers.pyarrow_read(plain, False)
    if arrow is not None:
        cases["pyarrow"] = arrow
    sizes = {"ours": ours_path.stat().st_size}
    with ExitStack() as stack:
        if csv_peers.PolarsWorker.available():
            cases["polars"] = stack.enter_context(csv_peers.PolarsWorker(plain, 1))
        samples = interleaved_samples(cases, repeats=5 if quick else 9, warmup=1)
        if "polars" in cases:  # the worker's own timings, without the pipe
            worker = cases["polars"]
            assert isinstance(worker, csv_peers.PolarsWorker)
            samples["polars"] = worker.seconds[-len(samples["polars"]):]
    for name, seconds in samples.items():
        nbytes = sizes.get(name, plain.stat().st_size)
        report.time(STAGE, f"{shape.name}: {name} 1 thread", float(np.median(seconds)),
                    nbytes=nbytes, ours=name == "ours")
    for peer in ("pandas", "polars", "pyarrow"):
        if peer in samples:
            report.ratio(STAGE, f"{shape.name}: vs {peer} 1 thread",
                         median_ratio(samples, peer, "ours"))


def run(quick: bool = False, seed: int = 0, data: BenchData | None = None,
        only: str | None = None) -> Report:
    """Measure every shape (or the ones whose name holds ``only``)."""
    data = data if data is not None else BenchData(quick=quick, seed=seed)
    report = Report()
    for shape in SHAPES:
        if only is None or only in shape.name:
            measure(report, shape, data, quick)
    return report


def table(report: Report) -> str:
    """Shapes x (MB/s of every case, ratios to every peer)."""
    rows: dict[str, dict[str, str]] = {}
    for t in report.timings:
        shape, case = t["name"].split(": ")
        rows.setdefault(shape, {})[case.split()[0] + " MB/s"] = f"{t['bytes'] / t['seconds'] / MB:.0f}"
    for r in report.ratios:
        shape, case = r.name.split(": ")
        rows.setdefault(shape, {})[case.split()[1]] = f"{r.value:.2f}x"
    cols = ["pandas", "polars", "pyarrow", "ours MB/s", "pandas MB/s", "polars MB/s",
            "pyarrow MB/s"]
    lines = [f"{'shape':<28}" + "".join(f"{c:>13}" for c in cols)]
    for shape, cells in rows.items():
        lines.append(f"{shape:<28}" + "".join(f"{cells.get(c, '-'):>13}" for c in cols))
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    args = sys.argv[1:]
    only = args[args.index("--only") + 1] if "--only" in args else None
    print(table(run(quick="--quick" in args, only=only)))
