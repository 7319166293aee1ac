"""Time a user's own data path: open (read), one epoch of batches, and padding per real element.

What ``lstm-data bench --data PATH --spec SPEC.toml`` runs in any install. It uses
only the public objects (``open``, ``BatchSpec``, ``Order``, ``ReadOptions``,
``Batches``) and reports the median of a few runs of each step.
"""
from __future__ import annotations

import json
import os
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from lstm_data.batching import Batches, BatchSpec, Ragged
from lstm_data.batching.order.options import Order
from lstm_data.io import open as open_dataset
from lstm_data.io.read_options import ReadOptions
from lstm_data._util.plural import counted

__all__ = ["OwnBench", "bench_own", "render", "save_json"]


@dataclass
class OwnBench:
    """Medians of the timed steps and the padding of one epoch.

    Attributes
    ----------
    paths, spec, runs, threads
        What was timed, and how.
    rows, nbytes, batches, batch_size
        Rows of the data, bytes of its files, batches per epoch and rows per batch.
    open_seconds, epoch_seconds
        Medians over ``runs``: ``lstm_data.open`` of the paths (for data read into
        RAM, such as CSV, the whole read), and one epoch of ``Batches.iter``.
    padding
        Per ragged output: ``slots`` (prong slots in all batches of epoch 0),
        ``real`` (slots that hold a prong of the data) and ``padded_per_real``
        (``(slots - real) / real``: the padded slots built for every real one).
    """

    paths: list[str]
    spec: str
    runs: int
    threads: int
    rows: int
    nbytes: int
    batches: int
    batch_size: int
    open_seconds: float
    epoch_seconds: float
    padding: dict[str, dict[str, float]] = field(default_factory=dict)


def _size(path: str) -> int:
    """Bytes of a file, or of every file under a directory (a zarr store)."""
    p = Path(path)
    if p.is_dir():
        return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
    return p.stat().st_size if p.exists() else 0


def _time(step: Any, runs: int) -> tuple[float, Any]:
    """Median seconds of ``runs`` calls of ``step(run)``, and the last call's result."""
    seconds, result = [], None
    for k in range(runs):
        t0 = time.perf_counter()
        result = step(k)
        seconds.append(time.perf_counter() - t0)
    return statistics.median(seconds), result


def bench_own(paths: Sequence[str | os.PathLike[str]], spec_path: str | os.PathLike[str], *,
              batch_size: int | None = None, runs: int = 3, threads: int = 1,
              seed: int = 0) -> OwnBench:
    """Time opening ``paths`` and one epoch of the batches ``spec_path`` describes.

    Parameters
    ----------
    paths
        Data files (several concatenate), any format ``lstm_data.open`` reads.
    spec_path
        A :class:`BatchSpec` TOML file; its ``[order]`` and ``[read]`` tables, when
        present, give the row order and the reader options.
    batch_size
        Rows per batch; overrides the spec file's ``[order]`` (default 1024).
    runs
        Timed runs of each step, an int >= 1; medians are reported.
    threads
        Batch-building threads of the timed epochs.
    seed
        Seed of the row order when the spec file's ``[order]`` gives none.

    Returns
    -------
    OwnBench
        The medians and the padding of epoch 0.
    """
    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    names = [os.fspath(p) for p in paths]
    spec = BatchSpec.from_toml(spec_path)
    order = Order.from_toml(spec_path)
    read = ReadOptions.from_toml(spec_path)
    changes: dict[str, Any] = {"batch_size": batch_size} if batch_size is not None else {}
    if order.seed is None:
        changes["seed"] = seed
    order = order.replace(**changes)
    source = names[0] if len(names) == 1 else names
    open_seconds, dataset = _time(lambda k: open_dataset(source, read=read), runs)
    batches = Batches(dataset, spec, order)
    ragged = {name: fld for role, name, fld in spec.fields() if isinstance(fld, Ragged)}
    widths: dict[str, list[int]] = {name: [] for name in ragged}

    def epoch(k: int) -> None:
        batches.set_epoch(k)
        for inputs, targets, *_ in batches.iter(threads=threads):
            if k == 0:
                for name in ragged:
                    out = inputs[name] if name in inputs else targets[name]
                    widths[name].append(out.shape[1])

    epoch_seconds, _ = _time(epoch, runs)
    return OwnBench(paths=names, spec=os.fspath(spec_path), runs=runs, threads=threads,
                    rows=len(dataset), nbytes=sum(_size(p) for p in names), batches=len(batches),
                    batch_size=order.batch_size, open_seconds=open_seconds, epoch_seconds=epoch_seconds,
                    padding=_padding(dataset, batches, ragged, widths))


def _padding(dataset: Any, batches: Batches, ragged: dict[str, Ragged],
             widths: dict[str, list[int]]) -> dict[str, dict[str, float]]:
    """Prong slots and real prongs of every ragged output over the batches of epoch 0."""
    result = {}
    for name, fld in ragged.items():
        offsets = np.asarray(dataset.offsets(dataset.group_of(fld.vars[0])))
        lengths = np.diff(offsets)
        slots = real = 0
        for index, width in enumerate(widths[name]):
            rows = np.asarray(batches.rows_of(index, 0))
            slots += len(rows) * width
            real += int(np.minimum(lengths[rows], width).sum())
        result[name] = {"slots": slots, "real": real,
                        "padded_per_real": (slots - real) / real if real else float("inf")}
    return result


def render(result: OwnBench) -> str:
    """The report printed by ``lstm-data bench --data``."""
    mb = result.nbytes / 1e6
    lines = [f"lstm-data bench --data ({counted(result.rows, 'row')}, {mb:.1f} MB on disk; "
             f"median of {counted(result.runs, 'run')})",
             f"  open (read)       {result.open_seconds:9.3f} s   "
             f"{result.rows / max(result.open_seconds, 1e-12):12,.0f} rows/s   "
             f"{mb / max(result.open_seconds, 1e-12):8.1f} MB/s",
             f"  one epoch         {result.epoch_seconds:9.3f} s   "
             f"{result.rows / max(result.epoch_seconds, 1e-12):12,.0f} rows/s   "
             f"{counted(result.batches, 'batch')} of {result.batch_size}, {counted(result.threads, 'thread')}"]
    for name, pad in result.padding.items():
        lines.append(f"  padding {name}: {pad['padded_per_real']:.3f} padded slots per real element "
                     f"({int(pad['real'])} real of {int(pad['slots'])} slots)")
    if not result.padding:
        lines.append("  padding: the spec has no ragged output")
    return "\n".join(lines)


def save_json(result: OwnBench, path: str | os.PathLike[str]) -> None:
    """Write ``result`` as JSON."""
    Path(path).write_text(json.dumps(asdict(result), indent=2))
