"""Scale benchmarks: streaming convert memory and speed, convert on a Dask cluster.

Stage ``scale``, same-run figures (floors in ``floors.toml``):

* ``streaming convert peak RSS, large CSV (MB)``: ``VmHWM`` of a fresh process that
  converts a CSV of 2 GB (400 MB with ``--quick``) built by repeating the bench
  CSV's rows (the realistic token mix), to zarr;
* ``streaming convert RSS large / small``: the same over the peak converting a CSV
  10x smaller (4x with ``--quick``): must not grow with the input;
* ``streaming convert / in-RAM convert MB/s``: throughput of the large streaming
  convert over the in-RAM convert of the small file (``read_csv`` whole, then
  ``write_zarr``), per input MB, measured in fresh processes;
* ``Dask convert, 2 workers / 1 worker``: converting 8 CSV files on a
  ``LocalCluster`` of two single-threaded worker processes over one; the
  ceiling of this machine in the same run (two processes converting 4 files each
  at once, over one process converting all 8) is reported next to it.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import child_env
from bench.data import BenchData
from bench.timing import Report, median_of_ratios

__all__ = ["run", "repeat_csv"]

STAGE = "scale"
MB = 1e6
#: rounds of the three converts (each a fresh process), by quick; each ratio is the median of per-round ratios
ROUNDS = {True: 1, False: 3}

_CONVERT_CODE = """\
import json, sys, time
from lstm_data.io.ours.convert import convert_streaming
from lstm_data.io.csv.reader import read_csv
from lstm_data.io.ours.write import write_zarr
mode, src, dst = sys.argv[1], sys.argv[2:-1], sys.argv[-1]
t0 = time.perf_counter()
if mode == "stream":
    convert_streaming(src, dst)
else:
    write_zarr(read_csv(src[0]), dst)
seconds = time.perf_counter() - t0
rss = next(int(line.split()[1]) * 1024 for line in open('/proc/self/status') if line.startswith('VmHWM:'))
print(json.dumps([rss, seconds]))
"""


def repeat_csv(src: Path, dst: Path, target_bytes: int) -> int:
    """Write ``src``'s header once, then its rows again and again until ``dst`` holds ``target_bytes``."""
    with open(src, "rb") as fh:
        header = fh.readline()
        body = fh.read()
    written = 0
    with open(dst, "wb") as out:
        out.write(header)
        written += len(header)
        while written < target_bytes:
            out.write(body)
            written += len(body)
    return written


def _convert(mode: str, sources: list[Path], dst: Path) -> tuple[int, float]:
    """``(peak RSS bytes, seconds)`` of a fresh process converting ``sources`` to ``dst``."""
    out = subprocess.run([sys.executable, "-c", _CONVERT_CODE, mode, *map(str, sources), str(dst)],
                         check=True, capture_output=True, text=True, env=child_env()).stdout
    rss, seconds = json.loads(out.strip().splitlines()[-1])
    _remove(dst)
    return int(rss), float(seconds)


def _remove(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def run(quick: bool = False, seed: int = 0, data: BenchData | None = None) -> Report:
    """Measure the scale stage (see the module docstring)."""
    report = Report()
    data = data if data is not None else BenchData(quick=quick, seed=seed)
    # full: 2 GB and 200 MB; quick: 400 MB and 100 MB (a smaller "small" file is all fixed cost:
    # imports and the first blocks, not what grows with the input)
    large_bytes, small_bytes = (400 * 10 ** 6, 100 * 10 ** 6) if quick else (2000 * 10 ** 6, 200 * 10 ** 6)
    with tempfile.TemporaryDirectory(prefix="lstm_data_bench_scale_") as tmp:
        tmp = Path(tmp)
        small, large = tmp / "small.csv", tmp / "large.csv"
        small_size = repeat_csv(data.csv, small, small_bytes)
        large_size = repeat_csv(data.csv, large, large_bytes)
        runs: dict[str, list[tuple[int, float]]] = {"small": [], "ram": [], "large": []}
        jobs = {"small": ("stream", small, "s.zarr"), "ram": ("ram", small, "r.zarr"),
                "large": ("stream", large, "l.zarr")}
        for k in range(ROUNDS[quick]):  # fresh processes of seconds each: rounds of one run each, rotated
            order = list(jobs)[k % len(jobs):] + list(jobs)[:k % len(jobs)]
            for name in order:
                mode, src, dst = jobs[name]
                runs[name].append(_convert(mode, [src], tmp / dst))
        rss = {k: [float(r[0]) for r in v] for k, v in runs.items()}
        sec = {k: [r[1] for r in v] for k, v in runs.items()}
        report.time(STAGE, f"streaming convert, {large_size / MB:.0f} MB CSV", statistics.median(sec["large"]),
                    nbytes=large_size, ours=True)
        report.time(STAGE, f"in-RAM convert, {small_size / MB:.0f} MB CSV", statistics.median(sec["ram"]),
                    nbytes=small_size)
        report.ratio(STAGE, "streaming convert peak RSS, large CSV (MB)", statistics.median(rss["large"]) / MB,
                     kind="max")
        report.ratio(STAGE, "streaming convert RSS large / small", median_of_ratios(rss["large"], rss["small"]),
                     kind="max")
        report.ratio(STAGE, "in-RAM convert peak RSS, small CSV (MB)", statistics.median(rss["ram"]) / MB,
                     kind="max")
        # MB/s of the large streaming convert over the in-RAM convert's, round by round
        report.ratio(STAGE, "streaming convert / in-RAM convert MB/s",
                     median_of_ratios([s * large_size for s in sec["ram"]],
                                      [s * small_size for s in sec["large"]]))
        _dask(report, data, tmp, quick)
    return report


def _dask(report: Report, data: BenchData, tmp: Path, quick: bool) -> None:
    """2 Dask workers over 1 on 8 input files, and this machine's 2-process ceiling."""
    try:
        import distributed
    except ImportError:  # pragma: no cover - the dask extra is not installed
        return
    import logging

    from lstm_data.io.ours.convert import convert_streaming
    from lstm_data.scale.convert import convert_distributed

    files = []
    for i in range(8):
        f = tmp / f"in{i}.csv"
        repeat_csv(data.csv, f, (8 if quick else 40) * 10 ** 6)
        files.append(str(f))
    total = sum(os.path.getsize(f) for f in files)
    seconds = {}
    for workers in (1, 2):
        with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                      dashboard_address=":0", silence_logs=logging.ERROR) as cluster, \
                distributed.Client(cluster) as client:
            convert_distributed(files[:2], tmp / "warm.zarr", client=client)  # workers import everything
            _remove(tmp / "warm.zarr")
            t0 = time.perf_counter()
            convert_distributed(files, tmp / f"d{workers}.zarr", client=client)
            seconds[workers] = time.perf_counter() - t0
            _remove(tmp / f"d{workers}.zarr")
    # the ceiling: the same streaming work in two processes at once, over one process doing it all
    t0 = time.perf_counter()
    convert_streaming(files, tmp / "one.zarr")
    one = time.perf_counter() - t0
    _remove(tmp / "one.zarr")
    env = child_env()
    code = "import sys; from lstm_data.io.ours.convert import convert_streaming; convert_streaming(sys.argv[1:-1], sys.argv[-1])"
    t0 = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", code, *files[k::2], str(tmp / f"half{k}.zarr")], env=env)
             for k in (0, 1)]
    for p in procs:
        p.wait()
    two = time.perf_counter() - t0
    report.time(STAGE, f"Dask convert of 8 CSV files ({total / MB:.0f} MB), 1 worker", seconds[1],
                nbytes=total, ours=True)
    report.time(STAGE, f"Dask convert of 8 CSV files ({total / MB:.0f} MB), 2 workers", seconds[2],
                nbytes=total, ours=True)
    report.ratio(STAGE, "Dask convert, 2 workers / 1 worker", seconds[1] / seconds[2])
    report.ratio(STAGE, "2 processes / 1 process ceiling (same run)", one / two)
