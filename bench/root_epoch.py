"""A block-shuffled epoch over ROOT files read on demand, against inflating its baskets alone.

Files written by uproot (zlib level 1), one jagged float32 branch per particle
variable, all sharing the counter ``npart`` (the full run: 4 files, 300k jets, 26
variables, about 1 GB of values, 10k jets a basket; ``--quick``: 4 files, 80k jets,
26 variables, 2500 jets a basket, so that an epoch has as many windows of the block
shuffle as the full run's, about 8: the next epoch's first window, read ahead as the
epoch ends, weighs as much in both). A spec pads every variable to 80. In one process, in a rotated order each round
(medians of the per-round ratios):

* ``epoch``: ``lstm_data.open(files, in_ram=False, threads=2)`` then one
  ``shuffle="block"`` epoch of ``Batches`` (batch 512), every batch built;
* ``inflate``: every basket of the needed branches read (``os.pread``) and inflated
  into a buffer its thread reuses by libdeflate's own C function (the reader's
  inflater, called in a loop per thread with no other work), on 2 threads;
* ``copy``: one ``np.copyto`` of each batch's padded array (the batches' bytes once);
* ``uproot``: ``uproot.iterate`` over the files (the needed branches, a 2-thread
  ``decompression_executor``) with the particles padded by awkward (``pad_none`` /
  ``fill_none`` / ``to_numpy``).

The figure is epoch / (inflate + copy): what reading, byte-swapping, interleaving
and padding add to the least an epoch must do.

Run alone (the full run is the shape above; ``--jets`` and ``--files`` change it)::

    python -m bench.root_epoch [--quick] [--rounds 7] [--jets 300000] [--files 4]
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
VARIABLES = 26
PARTICLE = [f"part_v{j}" for j in range(VARIABLES)]
NEEDED = PARTICLE + ["npart"]
MAX_LEN = 80
BATCH = 512


def write_files(folder: Path, jets: int, files: int, seed: int, step: int) -> None:
    """``files`` ROOT files of ``jets`` jets in all, ``step`` jets per basket (uproot, zlib 1)."""
    import awkward as ak
    import uproot

    rng = np.random.default_rng(seed)
    per = jets // files
    for k in range(files):
        with uproot.recreate(folder / f"jets_{k}.root", compression=uproot.ZLIB(1)) as fh:
            tree = None
            for a in range(0, per, step):
                n = min(step, per - a)
                counts = np.clip(rng.poisson(32, n), 1, 128)
                total = int(counts.sum())
                part = {v[5:]: np.round(rng.normal(0.0, 1.0, total), 2).astype(np.float32) for v in PARTICLE}
                cols = {"part": ak.unflatten(ak.zip(part), counts)}
                if tree is None:
                    tree = fh.mktree("tree", {c: v.type.content for c, v in cols.items()})
                tree.extend(cols)


def _files(data: BenchData, jets: int, files: int) -> list[str]:
    step = 2_500 if jets < 100_000 else 10_000

    def build(tmp: Path) -> None:
        tmp.mkdir(parents=True)
        write_files(tmp, jets, files, data.seed, step)
    folder = data.cached(f"_root_epoch_{jets}_{files}x{VARIABLES}", build)
    return sorted(str(p) for p in folder.glob("jets_*.root"))


def _spec() -> object:
    from lstm_data import BatchSpec, Ragged

    return BatchSpec(inputs={"part": Ragged(PARTICLE, max_len=MAX_LEN, pad_value=0.0)})


def _epoch(files: list[str]) -> Callable[[], float]:
    import lstm_data
    from lstm_data import Batches, Order

    spec = _spec()
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


def _blocks(files: list[str]) -> list[tuple[str, int, int, list[tuple[int, int, int]]]]:
    """(file, seek, bytes, zlib blocks (position, compressed, uncompressed bytes)) of every
    basket of the needed branches."""
    import uproot

    out = []
    for f in files:
        with uproot.open(f) as fh, open(f, "rb") as raw:
            tree = fh["tree"]
            for name in PARTICLE:
                b = tree[name]
                count = int(b.member("fWriteBasket"))
                for seek, size in zip(b.member("fBasketSeek")[:count], b.member("fBasketBytes")[:count]):
                    raw.seek(int(seek))
                    data = raw.read(int(size))
                    pos, blocks = int.from_bytes(data[14:16], "big"), []
                    while pos < len(data):
                        assert data[pos:pos + 2] == b"ZL", "the bench writes zlib baskets"
                        csize = int.from_bytes(data[pos + 3:pos + 6], "little")
                        usize = int.from_bytes(data[pos + 6:pos + 9], "little")
                        blocks.append((pos + 9, csize, usize))
                        pos += 9 + csize
                    out.append((f, int(seek), int(size), blocks))
    return out


def _inflate(files: list[str]) -> Callable[[], float]:
    """Each thread preads and inflates its share of the baskets into a buffer of its own,
    with libdeflate's C function (nothing else per basket)."""
    from lstm_data.io.root.inflate_into import libdeflate_into

    into = libdeflate_into()
    if into is None:
        raise ImportError("the bench's inflate limit needs the deflate package (libdeflate)")
    jobs = _blocks(files)
    most = max(sum(u for _, _, u in blocks) for *_, blocks in jobs)

    def share(part: list[tuple[int, int, int, list[tuple[int, int, int]]]]) -> None:
        out = np.empty(most, dtype=np.uint8)
        out[:] = 0  # its pages faulted in before the clock, as the reader's buffers are
        for fd, seek, size, blocks in part:
            raw = os.pread(fd, size, seek)
            filled = 0
            for pos, csize, usize in blocks:
                into(raw, pos, csize, out, filled, usize)
                filled += usize

    def run() -> float:
        fds = {f: os.open(f, os.O_RDONLY) for f in files}
        try:
            mine = [(fds[f], s, z, b) for f, s, z, b in jobs]
            mine.sort(key=lambda job: -job[2])
            with ThreadPoolExecutor(THREADS) as pool:
                t0 = time.perf_counter()
                list(pool.map(share, [mine[k::THREADS] for k in range(THREADS)]))
                return time.perf_counter() - t0
        finally:
            for fd in fds.values():
                os.close(fd)
    return run


def _copy(files: list[str]) -> Callable[[], float]:
    """One ``np.copyto`` of every batch's padded ``(512, 80, 26)`` float32 array."""
    import lstm_data

    ds = lstm_data.open(files, in_ram=False, threads=THREADS, needed=NEEDED)
    n = len(ds)
    ds.close()
    src = np.ones((BATCH, MAX_LEN, VARIABLES), dtype=np.float32)
    dst = np.zeros_like(src)

    def run() -> float:
        t0 = time.perf_counter()
        for a in range(0, n, BATCH):
            rows = min(BATCH, n - a)
            np.copyto(dst[:rows], src[:rows])
        return time.perf_counter() - t0
    return run


def _uproot(files: list[str]) -> Callable[[], float]:
    import awkward as ak
    import uproot

    def run() -> float:
        t0 = time.perf_counter()
        with ThreadPoolExecutor(THREADS) as pool:
            for arrays in uproot.iterate([f + ":tree" for f in files], PARTICLE, step_size="64 MB",
                                         decompression_executor=pool):
                parts = [ak.to_numpy(ak.fill_none(ak.pad_none(arrays[v], MAX_LEN, clip=True), 0.0))
                         for v in PARTICLE]
                np.stack(parts, axis=-1)
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


def run(quick: bool = False, seed: int = 0, data: BenchData | None = None, rounds: int | None = None,
        jets: int | None = None, files: int = 4, uproot: bool = True) -> Report:
    """The epoch, the inflate-alone limit, one copy of the batches and uproot's iterate + pad, interleaved."""
    data = data if data is not None else BenchData(quick=quick, seed=seed)
    jets = jets or (80_000 if quick else 300_000)
    paths = _files(data, jets, files)
    cases = {"epoch": _epoch(paths), "inflate": _inflate(paths), "copy": _copy(paths)}
    if uproot:
        cases["uproot"] = _uproot(paths)
    times, cpu = _rounds(cases, rounds or (5 if quick else 7))
    report = Report()
    med = statistics.median
    limit = [i + c for i, c in zip(times["inflate"], times["copy"])]
    report.time(STAGE, f"on-demand epoch, block shuffle ({THREADS} threads)", med(times["epoch"]),
                items=jets, ours=True)
    report.time(STAGE, f"inflate the needed baskets alone ({THREADS} threads)", med(times["inflate"]), items=jets)
    report.time(STAGE, "one copy of every padded batch", med(times["copy"]), items=jets)
    report.ratio(STAGE, "ROOT on-demand epoch / (inflating its baskets + one copy of its batches)",
                 med(e / x for e, x in zip(times["epoch"], limit)), kind="max")
    # on a shared machine more runnable threads take a larger share of the cores: the CPU
    # seconds (every thread of the process) say how much work the epoch adds to the limit
    report.ratio(STAGE, "ROOT on-demand epoch / (inflating its baskets + one copy of its batches), CPU seconds",
                 med(e / (i + c) for e, i, c in zip(cpu["epoch"], cpu["inflate"], cpu["copy"])), kind="max")
    if uproot:
        report.time(STAGE, "uproot.iterate + awkward padding", med(times["uproot"]), items=jets)
        report.ratio(STAGE, "ROOT on-demand epoch vs uproot.iterate + awkward padding",
                     med(u / e for u, e in zip(times["uproot"], times["epoch"])))
    return report


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--jets", type=int, default=None, help="jets in all (default 300000, quick 80000)")
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--no-uproot", action="store_true", help="leave out uproot.iterate (faster rounds)")
    args = parser.parse_args()
    print(run(quick=args.quick, rounds=args.rounds, jets=args.jets, files=args.files,
              uproot=not args.no_uproot).render())


if __name__ == "__main__":
    main()
