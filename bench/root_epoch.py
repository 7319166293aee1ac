"""A block-shuffled epoch over ROOT files read on demand, against inflating its baskets alone.

Files written by uproot (zlib level 1), one jagged float32 branch per particle
variable, all sharing the counter ``npart`` (the full run: 4 files, 300k jets, 26
variables, about 1 GB of values, 10k jets a basket; ``--quick``: 4 files, 80k jets,
26 variables, 2500 jets a basket, so that an epoch has as many windows of the block
shuffle as the full run's, about 8: the next epoch's first window, read ahead as the
epoch ends, weighs as much in both). A spec pads every variable to 80. In one process, in a rotated order each round
(medians of the per-round ratios):

* ``epoch``: ``lstm_data.open(files, in_ram=False, threads=2)`` then one
  ``shuffle="block"`` epoch of ``Batches`` (batch 512), every batch built: the first
  epoch of a run, which reads its own first window and also the next epoch's first
  window ahead as it ends (about an eighth more baskets than the files hold; the clock
  stops once that read has ended);
* ``steady``: the next epoch of one ``Batches`` kept across the rounds (epochs 1, 2, ...,
  as a training run iterates them): it receives its first window from its predecessor
  and pays for its successor's (the clock stops once that read ahead has ended);
* ``inflate``: the baskets the first epoch reads (each chunk's baskets of the needed
  branches once per window that touches it, the counter's included) read (one
  ``os.preadv`` per run of adjacent baskets, as the reader reads them) and inflated into
  a buffer its thread reuses by the reader's own inflater, the compiled
  ``lstm_data.kernels.inflate_baskets`` calling libdeflate per basket and block without
  the GIL, one call per chunk (its block tables made beforehand: no other work), on the
  reader's own pool of 2 threads: the real limit of the reader's inflating;
* ``inflate steady``: the same for exactly the baskets the steady epoch reads (its
  windows but the first, and the next epoch's first window);
* ``copy``: one ``np.copyto`` of each batch's padded array (the batches' bytes once);
* ``uproot``: ``uproot.iterate`` over the files (the needed branches, a 2-thread
  ``decompression_executor``) with the particles padded by awkward (``pad_none`` /
  ``fill_none`` / ``to_numpy``).

The figures are epoch / (inflate + copy) and steady / (inflate steady + copy): what
reading, byte-swapping, interleaving and padding add to the least an epoch must do. The
floor is judged on the steady epoch, the epoch a training run repeats; the first epoch
is shown too.

Run alone (the full run is the shape above; ``--jets``, ``--files`` and ``--variables``
change it)::

    python -m bench.root_epoch [--quick] [--rounds 7] [--jets 300000] [--files 4] [--variables 26]
"""
from __future__ import annotations

import argparse
import os
import statistics
import threading
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
MAX_LEN = 80
BATCH = 512


def particle(variables: int = VARIABLES) -> list[str]:
    """The particle branches of files of ``variables`` variables."""
    return [f"part_v{j}" for j in range(variables)]


def needed(variables: int = VARIABLES) -> list[str]:
    """The branches an epoch reads: the particle branches and their counter."""
    return particle(variables) + ["npart"]


def write_files(folder: Path, jets: int, files: int, seed: int, step: int, variables: int = VARIABLES) -> None:
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
                part = {v[5:]: np.round(rng.normal(0.0, 1.0, total), 2).astype(np.float32) for v in particle(variables)}
                cols = {"part": ak.unflatten(ak.zip(part), counts)}
                if tree is None:
                    tree = fh.mktree("tree", {c: v.type.content for c, v in cols.items()})
                tree.extend(cols)


def _files(data: BenchData, jets: int, files: int, variables: int) -> list[str]:
    step = 2_500 if jets < 100_000 else 10_000

    def build(tmp: Path) -> None:
        tmp.mkdir(parents=True)
        write_files(tmp, jets, files, data.seed, step, variables)
    folder = data.cached(f"_root_epoch_{jets}_{files}x{variables}", build)
    return sorted(str(p) for p in folder.glob("jets_*.root"))


def _spec(variables: int) -> object:
    from lstm_data import BatchSpec, Ragged

    return BatchSpec(inputs={"part": Ragged(particle(variables), max_len=MAX_LEN, pad_value=0.0)})


def _epoch(files: list[str], variables: int) -> Callable[[], float]:
    """Open the files and build every batch of epoch 0 (the plan of :class:`_Steady`'s epoch 0)."""
    import lstm_data
    from lstm_data import Batches, Order

    spec = _spec(variables)

    def run() -> float:
        t0 = time.perf_counter()
        ds = lstm_data.open(files, in_ram=False, threads=THREADS, needed=needed(variables))
        batches = Batches(ds, spec, Order(batch_size=BATCH, shuffle="block", seed=1))
        for i in range(len(batches)):
            batches.batch(i, 0)
        _join_read_ahead()
        seconds = time.perf_counter() - t0
        ds.close()
        return seconds
    return run


#: one basket of a needed branch: (file index, seek, bytes, first entry, key length,
#: uncompressed bytes its key declares)
Basket = tuple[int, int, int, int, int, int]


def _baskets(files: list[str], variables: int) -> list[Basket]:
    """Every basket of the needed branches (the counter's too: a window reads it as a scalar)."""
    import uproot

    out = []
    for f, path in enumerate(files):
        with uproot.open(path) as fh, open(path, "rb") as raw:
            tree = fh["tree"]
            for name in needed(variables):
                b = tree[name]
                count = int(b.member("fWriteBasket"))
                first = b.member("fBasketEntry")[:count]
                for seek, size, entry in zip(b.member("fBasketSeek")[:count], b.member("fBasketBytes")[:count],
                                             first):
                    raw.seek(int(seek))
                    key = raw.read(16)
                    keylen, objlen = int.from_bytes(key[14:16], "big"), int.from_bytes(key[6:10], "big")
                    out.append((f, int(seek), int(size), int(entry), keylen, objlen))
    return out


class _Chunk:
    """A chunk's baskets as the reader reads them: one ``os.preadv`` per run of adjacent
    baskets into one buffer, then one call of the reader's compiled inflater (its table,
    the blocks' place in the buffer and in the output, made here, before the clock)."""

    def __init__(self, baskets: list[Basket]) -> None:
        spans = sorted(baskets, key=lambda b: (b[0], b[1]))
        self.file = spans[0][0]
        self.nbytes = sum(b[2] for b in spans)
        self.runs: list[tuple[int, int, int]] = []  # (seek, position in the buffer, bytes)
        rows, pos, dst = [], 0, 0
        for b in spans:
            if self.runs and self.runs[-1][0] + self.runs[-1][2] == b[1]:
                seek, at, n = self.runs[-1]
                self.runs[-1] = (seek, at, n + b[2])
            else:
                self.runs.append((b[1], pos, b[2]))
            rows.append((pos + b[4], b[2] - b[4], b[5], dst))
            pos += b[2]
            dst = -(-(dst + b[5]) // 64) * 64
        self.table = np.array(rows, dtype=np.int64)
        self.out_bytes = dst


class _Share:
    """One thread's share of the chunks: each read and inflated into a buffer of its own by
    one call of the reader's compiled inflater, nothing else per chunk (a task of the reader's pool)."""

    def __init__(self, part: list[_Chunk], fds: list[int], functions: tuple[int, int, int]) -> None:
        self.part, self.fds, self.functions = part, fds, functions
        self.weight = sum(c.nbytes for c in part)

    def run(self, fd: int, file: str, tree: str) -> None:
        from lstm_data.kernels import INFLATED, inflate_baskets

        out = np.empty(max((c.out_bytes for c in self.part), default=1), dtype=np.uint8)
        out[:] = 0  # its pages faulted in before the baskets, as the reader's buffers are
        for c in self.part:
            raw = bytearray(c.nbytes)
            view = memoryview(raw)
            for seek, at, n in c.runs:
                os.preadv(self.fds[c.file], [view[at:at + n]], seek)
            status = inflate_baskets(raw, c.table, out, self.functions)[0]
            assert status == INFLATED, "the bench writes zlib baskets"


def _inflate(files: list[str], pick: Callable[[], list[list[Basket]]]) -> Callable[[], float]:
    """Inflate the chunks ``pick()`` names (each time called), split in two shares of about
    equal bytes, on the reader's pool of 2 threads."""
    from lstm_data.io.root.direct import run_tasks
    from lstm_data.io.root.inflate_into import libdeflate_functions

    functions = libdeflate_functions()
    if functions is None:
        raise ImportError("the bench's inflate limit needs the deflate package (libdeflate)")

    def run() -> float:
        jobs = sorted((_Chunk(c) for c in pick()), key=lambda c: -c.nbytes)
        fds = [os.open(f, os.O_RDONLY) for f in files]
        try:
            shares = [_Share(jobs[k::THREADS], fds, functions) for k in range(THREADS)]
            t0 = time.perf_counter()
            run_tasks(shares, -1, files[0], "tree", THREADS)
            return time.perf_counter() - t0
        finally:
            for fd in fds:
                os.close(fd)
    return run


def _join_read_ahead() -> None:
    """Wait for the windows read ahead (the next epoch's first) to be read."""
    for thread in threading.enumerate():
        if thread.name == "lstm_data-read-ahead":
            thread.join()


class _Steady:
    """Epochs 0, 1, 2, ... of one ``Batches``, one a call; the baskets each epoch reads."""

    def __init__(self, files: list[str], baskets: list[Basket], variables: int) -> None:
        import lstm_data
        from lstm_data import Batches, Order

        self.ds = lstm_data.open(files, in_ram=False, threads=THREADS, needed=needed(variables))
        self.batches = Batches(self.ds, _spec(variables), Order(batch_size=BATCH, shuffle="block", seed=1))
        self.epoch = self.limit_epoch = 0
        by_chunk: dict[tuple[int, int], list[Basket]] = {}
        for b in baskets:
            bounds = self.ds.datasets[b[0]].chunk_bounds
            by_chunk.setdefault((b[0], int(np.searchsorted(bounds, b[3], side="right")) - 1), []).append(b)
        self.by_chunk = by_chunk

    def run(self) -> float:
        e, self.epoch = self.epoch, self.epoch + 1
        t0 = time.perf_counter()
        for i in range(len(self.batches)):
            self.batches.batch(i, e)
        _join_read_ahead()
        return time.perf_counter() - t0

    def _window_chunks(self, epoch: int, windows: range | list[int]) -> list[tuple[int, int]]:
        """(file, chunk) of every chunk the windows of ``epoch`` touch, once per window."""
        pipeline = self.batches.pipeline
        plan, bounds = pipeline.plan(epoch), pipeline.blocks.bounds
        out = []
        for w in windows:
            held = np.concatenate([np.arange(bounds[b], bounds[b + 1]) for b in plan.windows.block_ids[w]])
            rows = pipeline.rows_at(held)
            f = np.searchsorted(self.ds.cumulative, rows, side="right") - 1
            for part in np.unique(f).tolist():
                local = rows[f == part] - self.ds.cumulative[part]
                chunks = np.searchsorted(self.ds.datasets[part].chunk_bounds, local, side="right") - 1
                out += [(part, int(k)) for k in np.unique(chunks)]
        return out

    def chunks_read(self, epoch: int) -> list[tuple[int, int]]:
        """The chunks ``epoch`` reads: its windows (but the first, read by the epoch before, unless
        it is epoch 0), and the next epoch's first window."""
        n = len(self.batches.pipeline.plan(epoch).windows.block_ids)
        own = range(0 if epoch == 0 else 1, n)
        return self._window_chunks(epoch, own) + self._window_chunks(epoch + 1, [0])

    def baskets_read(self, epoch: int) -> list[list[Basket]]:
        """The baskets ``epoch`` reads, chunk by chunk (see :meth:`chunks_read`)."""
        return [self.by_chunk[key] for key in self.chunks_read(epoch)]

    def limit_baskets(self) -> list[list[Basket]]:
        """The baskets of the next epoch the limit stands for (one epoch a call, as :meth:`run`)."""
        e, self.limit_epoch = self.limit_epoch, self.limit_epoch + 1
        return self.baskets_read(e)


def _copy(files: list[str], variables: int) -> Callable[[], float]:
    """One ``np.copyto`` of every batch's padded ``(512, 80, variables)`` float32 array."""
    import lstm_data

    ds = lstm_data.open(files, in_ram=False, threads=THREADS, needed=needed(variables))
    n = len(ds)
    ds.close()
    src = np.ones((BATCH, MAX_LEN, variables), dtype=np.float32)
    dst = np.zeros_like(src)

    def run() -> float:
        t0 = time.perf_counter()
        for a in range(0, n, BATCH):
            rows = min(BATCH, n - a)
            np.copyto(dst[:rows], src[:rows])
        return time.perf_counter() - t0
    return run


def _uproot(files: list[str], variables: int) -> Callable[[], float]:
    import awkward as ak
    import uproot

    def run() -> float:
        t0 = time.perf_counter()
        with ThreadPoolExecutor(THREADS) as pool:
            for arrays in uproot.iterate([f + ":tree" for f in files], particle(variables), step_size="64 MB",
                                         decompression_executor=pool):
                parts = [ak.to_numpy(ak.fill_none(ak.pad_none(arrays[v], MAX_LEN, clip=True), 0.0))
                         for v in particle(variables)]
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
        jets: int | None = None, files: int = 4, uproot: bool = True, variables: int = VARIABLES) -> Report:
    """The first and a steady epoch, their inflate-alone limits, one copy of the batches and
    uproot's iterate + pad, interleaved."""
    data = data if data is not None else BenchData(quick=quick, seed=seed)
    jets = jets or (80_000 if quick else 300_000)
    paths = _files(data, jets, files, variables)
    baskets = _baskets(paths, variables)
    steady = _Steady(paths, baskets, variables)
    first = steady.baskets_read(0)
    cases = {"epoch": _epoch(paths, variables), "inflate": _inflate(paths, lambda: first),
             "steady": steady.run, "inflate steady": _inflate(paths, steady.limit_baskets),
             "copy": _copy(paths, variables)}
    if uproot:
        cases["uproot"] = _uproot(paths, variables)
    times, cpu = _rounds(cases, rounds or (5 if quick else 7))
    steady.ds.close()
    report = Report()
    med = statistics.median
    report.time(STAGE, f"on-demand first epoch, block shuffle ({THREADS} threads)", med(times["epoch"]),
                items=jets, ours=True)
    report.time(STAGE, f"on-demand steady epoch, block shuffle ({THREADS} threads)", med(times["steady"]),
                items=jets, ours=True)
    report.time(STAGE, f"inflate the needed baskets alone ({THREADS} threads)", med(times["inflate"]), items=jets)
    report.time(STAGE, f"inflate a steady epoch's baskets alone ({THREADS} threads)", med(times["inflate steady"]),
                items=jets)
    report.time(STAGE, "one copy of every padded batch", med(times["copy"]), items=jets)
    for label, ours, limit in (("first", "epoch", "inflate"), ("steady", "steady", "inflate steady")):
        name = f"ROOT on-demand {label} epoch / (inflating its baskets + one copy of its batches)"
        report.ratio(STAGE, name, med(e / (i + c) for e, i, c in zip(times[ours], times[limit], times["copy"])),
                     kind="max")
        # on a shared machine more runnable threads take a larger share of the cores: the CPU
        # seconds (every thread of the process) say how much work the epoch adds to the limit
        report.ratio(STAGE, name + ", CPU seconds",
                     med(e / (i + c) for e, i, c in zip(cpu[ours], cpu[limit], cpu["copy"])), kind="max")
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
    parser.add_argument("--variables", type=int, default=VARIABLES,
                        help=f"particle branches of the files (default {VARIABLES})")
    parser.add_argument("--no-uproot", action="store_true", help="leave out uproot.iterate (faster rounds)")
    args = parser.parse_args()
    print(run(quick=args.quick, rounds=args.rounds, jets=args.jets, files=args.files,
              uproot=not args.no_uproot, variables=args.variables).render())


if __name__ == "__main__":
    main()
