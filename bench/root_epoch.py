"""A block-shuffled epoch over ROOT files read on demand, against inflating its baskets alone.

JetClass-like files (:func:`bench.root_read.write_files`: 8 jagged float32 particle
variables with the counter ``npart``, 5 jet scalars; uproot, zlib level 1, 2 files). A
spec needs 6 particle variables (padded to 128) and 3 scalars. In one process, in a
rotated order each round (medians of the per-round ratios):

* ``epoch``: ``lstm_data.open(files, in_ram=False, threads=2)`` then one
  ``shuffle="block"`` epoch of ``Batches`` (batch 512), every batch built;
* ``inflate``: the compressed baskets of the needed branches read (``os.pread``) and
  inflated, nothing else, on a pool of 2 threads with the inflater the reader uses (the
  limit an epoch can reach);
* ``uproot``: ``uproot.iterate`` over the files (the needed branches, a 2-thread
  ``decompression_executor``) with the particles padded to 128 by awkward
  (``pad_none`` / ``fill_none`` / ``to_numpy``).

Run alone::

    python -m bench.root_epoch [--quick] [--rounds 7]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

import numpy as np

from bench.data import BenchData
from bench.timing import Report

STAGE = "root_epoch"
THREADS = 2
PARTICLE = ["px", "py", "pz", "energy", "deta", "dphi"]
SCALARS = ["jet_pt", "jet_eta", "label"]
NEEDED = [f"part_{v}" for v in PARTICLE] + SCALARS
MAX_LEN = 128
BATCH = 512


def _files(data: BenchData, jets: int) -> list[str]:
    from bench.root_read import write_files

    def build(tmp: Path) -> None:
        tmp.mkdir(parents=True)
        write_files(tmp, jets, files=2, seed=data.seed)
    folder = data.cached(f"_root_epoch_{jets}", build)
    return sorted(str(p) for p in folder.glob("jets_*.root"))


def _epoch(files: list[str]) -> Callable[[], float]:
    import lstm_data
    from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars

    spec = BatchSpec(inputs={"part": Ragged(NEEDED[:6], max_len=MAX_LEN, pad_value=0.0),
                             "jet": Scalars(SCALARS[:2])}, targets={"label": Scalars(SCALARS[2:])})
    state = {"seed": 0}

    def run() -> float:
        state["seed"] += 1
        t0 = time.perf_counter()
        ds = lstm_data.open(files, in_ram=False, threads=THREADS, needed=NEEDED)
        batches = Batches(ds, spec, Order(batch_size=BATCH, shuffle="block", seed=state["seed"]))
        for i in range(len(batches)):
            batches.batch(i, 0)
        seconds = time.perf_counter() - t0
        ds.close()
        return seconds
    return run


def _baskets(files: list[str]) -> list[tuple[str, int, int]]:
    """(file, seek, bytes) of every basket of the needed branches."""
    import uproot

    out = []
    for f in files:
        with uproot.open(f) as fh:
            tree = fh["tree"]
            for name in NEEDED:
                b = tree[name]
                count = int(b.member("fWriteBasket"))
                out += [(f, int(s), int(z)) for s, z in zip(b.member("fBasketSeek")[:count],
                                                             b.member("fBasketBytes")[:count])]
    return out


def _inflate(files: list[str]) -> Callable[[], float]:
    from lstm_data.io.root.baskets import _make_inflater, inflater_name

    inflate = _make_inflater(inflater_name())  # the reader's own inflater
    jobs = _baskets(files)

    def one(job: tuple[int, int, int]) -> int:
        fd, seek, size = job
        raw = os.pread(fd, size, seek)
        view = memoryview(raw)
        pos, done = int.from_bytes(raw[14:16], "big"), 0
        while pos < len(raw):
            csize = raw[pos + 3] | raw[pos + 4] << 8 | raw[pos + 5] << 16
            usize = raw[pos + 6] | raw[pos + 7] << 8 | raw[pos + 8] << 16
            done += len(inflate(view[pos + 9:pos + 9 + csize], usize))
            pos += 9 + csize
        return done

    def run() -> float:
        fds = {f: os.open(f, os.O_RDONLY) for f in files}
        try:
            t0 = time.perf_counter()
            with ThreadPoolExecutor(THREADS) as pool:
                list(pool.map(one, [(fds[f], s, z) for f, s, z in jobs]))
            return time.perf_counter() - t0
        finally:
            for fd in fds.values():
                os.close(fd)
    return run


def _uproot(files: list[str]) -> Callable[[], float]:
    import awkward as ak
    import uproot

    def run() -> float:
        t0 = time.perf_counter()
        with ThreadPoolExecutor(THREADS) as pool:
            for arrays in uproot.iterate([f + ":tree" for f in files], NEEDED, step_size="64 MB",
                                         decompression_executor=pool):
                parts = [ak.to_numpy(ak.fill_none(ak.pad_none(arrays[v], MAX_LEN, clip=True), 0.0))
                         for v in NEEDED[:6]]
                np.stack(parts, axis=-1)
                for s in SCALARS:
                    ak.to_numpy(arrays[s])
        return time.perf_counter() - t0
    return run


def _rounds(cases: dict[str, Callable[[], float]], rounds: int) -> tuple[dict[str, list[float]],
                                                                         dict[str, list[float]]]:
    """Wall seconds and CPU seconds (this process, every thread) of each case per round."""
    names = list(cases)
    for name in names:  # warm-up: imports, page cache, the pool
        cases[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for k in range(rounds):
        for name in names[k % len(names):] + names[:k % len(names)]:
            c0 = time.process_time()
            times[name].append(cases[name]())
            cpu[name].append(time.process_time() - c0)
    return times, cpu


def run(quick: bool = False, seed: int = 0, data: BenchData | None = None, rounds: int | None = None) -> Report:
    """The epoch, the inflate-alone limit and uproot's iterate + pad, interleaved."""
    data = data if data is not None else BenchData(quick=quick, seed=seed)
    jets = 60_000 if quick else 200_000
    files = _files(data, jets)
    times, cpu = _rounds({"epoch": _epoch(files), "inflate": _inflate(files), "uproot": _uproot(files)},
                    rounds or (5 if quick else 7))
    report = Report()
    med = statistics.median
    report.time(STAGE, f"on-demand epoch, block shuffle ({THREADS} threads)", med(times["epoch"]),
                items=jets, ours=True)
    report.time(STAGE, f"inflate the needed baskets alone ({THREADS} threads)", med(times["inflate"]), items=jets)
    report.time(STAGE, "uproot.iterate + awkward padding", med(times["uproot"]), items=jets)
    report.ratio(STAGE, "ROOT on-demand epoch / inflating its baskets alone",
                 med(e / i for e, i in zip(times["epoch"], times["inflate"])), kind="max")
    # on a shared machine more runnable threads take a larger share of the cores: the CPU
    # seconds (every thread of the process) say how much work the epoch adds to inflating
    report.ratio(STAGE, "ROOT on-demand epoch / inflating its baskets alone, CPU seconds",
                 med(e / i for e, i in zip(cpu["epoch"], cpu["inflate"])), kind="max")
    report.ratio(STAGE, "ROOT on-demand epoch vs uproot.iterate + awkward padding",
                 med(u / e for u, e in zip(times["uproot"], times["epoch"])))
    return report


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args()
    print(run(quick=args.quick, rounds=args.rounds).render())


if __name__ == "__main__":
    main()
