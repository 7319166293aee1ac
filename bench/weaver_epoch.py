"""First and steady training epochs: ``lstm-data weaver``'s loaders against weaver-core's own.

The config is weaver-core's ``JetClass_full.yaml`` (``tests/data/weaver``: 9 new variables, 4
inputs of 128 particles with ``wrap`` padding, standardisation and clipping, 10 one-hot
labels). The data: ``FILES`` files of JetClass-like jets
(:func:`lstm_data.data.examples.weaver_jets.make_jets`, every branch the config names) written
by uproot with zlib level 1, as the public JetClass files are, and the same files converted to
Parquet by weaver-core's own ``weaver.utils.convert_to_parquet`` (``ak.to_parquet``, lz4, row
groups of 1000, the public conversion).

Both sides get weaver's parsed command line (``weaver.train.parser``, defaults filled as its
``main()`` does) with ``--data-train <files> --batch-size 512 --num-workers 2``, and build their
loaders with the function of that name, in a fresh process each (imports before the clock):

* ``weaver stream``: ``weaver.train.train_load(args)``, weaver-core's default streaming mode
  (``in_memory=False``; 2 worker processes, each reading its half of the files, with its
  async prefetch thread; each fetch reads ``--fetch-step`` of every file of the worker, shuffles
  and preprocesses it). The default ``--fetch-step 0.01`` reads 1000 jets of a 100k-jet JetClass
  file per fetch; the bench files are smaller, so the step is scaled to read the same 1000 jets
  per file per fetch (a smaller step only adds fetches);
* ``weaver in_memory``: the same with ``--in-memory --fetch-step 1 --steps-per-epoch S`` (as
  ``train.py`` requires: each worker loads and preprocesses its files once, then serves shuffled
  batches from RAM);
* ``ours``: ``lstm_data.adapters.weaver.train_load(args, LoaderOptions(threads=2))``, what
  ``lstm-data weaver --threads 2`` runs: the files opened on 2 threads (only the branches the
  config reads), the spec of ``BatchSpec.from_weaver``, a new full shuffle each epoch, batches
  built ahead on 2 threads.

The clock starts before ``train_load`` (weaver's also builds its validation loader, ours too) and
the first epoch ends with its last training batch; the steady epoch is a later one (the median of
epochs 2 and 3), in the same process. Every epoch yields ``S = trunc(0.8 n) // 512`` batches
(``drop_last``; weaver's streaming epoch may yield a few batches fewer, its times are scaled by
rows). Rounds run the sides in a rotated order; figures are medians of per-round ratios. The steady
epoch against weaver-core's in-memory loader is measured apart, both loaders in one process: after
their first epochs, rounds of one epoch of each, the order alternating (5 rounds quick, 9 full), so
that a burst of load hits both sides of a round (weaver-core's time varied 1.6x between fresh
processes on the shared box); the figure is the median of the per-round ratios.

Run alone::

    python -m bench.weaver_epoch [--quick] [--rounds 3] [--formats root,parquet]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.data import BenchData
from bench.timing import Report

STAGE = "weaver_epoch"
CONFIG = Path(__file__).resolve().parents[1] / "tests/data/weaver/JetClass_full.yaml"
BATCH = 512
WORKERS = 2  # weaver's --num-workers and our --threads
FILES = 4
#: jets per file per fetch with weaver's default --fetch-step 0.01 on a 100k-jet JetClass file
FETCH_JETS = 1000
SIDES = ("ours", "weaver_stream", "weaver_mem")
LAYOUT = 1  # bump when the files written change
#: alternating steady epochs of ours and weaver-core's in-memory loader, by --quick
STEADY_ROUNDS = {True: 5, False: 9}


def _write(folder: Path, jets: int, seed: int) -> None:
    import awkward as ak
    import uproot

    from lstm_data.data.examples.weaver_jets import make_jets

    folder.mkdir(parents=True)
    for i in range(FILES):
        data = make_jets(jets, seed * 100 + i)
        cols = {"part": ak.unflatten(ak.zip(data["part"]), data["counts"]), **data["jets"]}
        with uproot.recreate(folder / f"jets_{i}.root", compression=uproot.ZLIB(1)) as fh:
            tree = fh.mktree("tree", {c: (v.type.content if isinstance(v, ak.Array) else v.dtype)
                                      for c, v in cols.items()})
            tree.extend(cols)
    from weaver.utils.convert_to_parquet import convert_file  # the public conversion, its defaults

    for i in range(FILES):
        convert_file(str(folder / f"jets_{i}.root"), str(folder / f"jets_{i}.parquet"), treename="tree")


def files(data: BenchData, jets: int) -> dict[str, list[str]]:
    """The ROOT and Parquet files (``FILES`` of ``jets`` each), cached."""
    folder = data.cached(f"_weaver_epoch_{FILES}x{jets}_v{LAYOUT}",
                         lambda tmp: _write(tmp, jets, data.seed))
    return {fmt: sorted(str(p) for p in folder.glob(f"jets_*.{fmt}")) for fmt in ("root", "parquet")}


# -- the child: one side, one format, in a fresh process -------------------------------------------
def _args(side: str, paths: list[str], steps: int, fetch_step: float):
    import weaver.train

    argv = ["--data-train", *paths, "--data-config", str(CONFIG), "--network-config", "unused.py",
            "--batch-size", str(BATCH), "--num-workers", str(WORKERS), "--fetch-step", repr(fetch_step)]
    if side == "weaver_mem":
        argv += ["--in-memory", "--fetch-step", "1", "--steps-per-epoch", str(steps)]
    args = weaver.train.parser.parse_args(argv)
    # the defaults weaver.train.main() fills in before it calls train_load
    args.batch_size_val = args.batch_size_val or args.batch_size
    args.data_config_val = args.data_config_val or args.data_config
    args.data_config_test = args.data_config_test or args.data_config
    args.fetch_step_val = args.fetch_step if args.fetch_step_val is None else args.fetch_step_val
    args.data_split_val = args.data_split_num if args.data_split_val is None else args.data_split_val
    args.in_memory_val = args.in_memory if args.in_memory_val is None else args.in_memory_val
    args.local_rank = None  # no distributed backend
    if args.steps_per_epoch is not None and args.steps_per_epoch_val is None:
        args.steps_per_epoch_val = round(args.steps_per_epoch * args.batch_size * (1 - args.train_val_split)
                                         / args.train_val_split / args.batch_size_val)
    return args


def child(payload: dict) -> dict:
    """First epoch (from ``train_load``) and later epochs of one side; seconds and rows of each."""
    import logging

    import awkward  # noqa: F401  (imports before the clock, on both sides)
    import torch
    import uproot  # noqa: F401
    import weaver.train

    import lstm_data.adapters.weaver as ours

    logging.getLogger("weaver").setLevel(logging.ERROR)
    torch.set_num_threads(1)  # neither loader uses torch's intra-op threads; keep the cores for the workers
    if payload["side"] == "interleaved":
        return child_interleaved(payload)
    side, steps = payload["side"], payload["steps"]
    args = _args(side, payload["files"], steps, payload["fetch_step"])
    t0 = time.perf_counter()
    if side == "ours":
        loader = ours.train_load(args, ours.LoaderOptions(threads=WORKERS))[0]
    else:
        loader = weaver.train.train_load(args)[0]
    epochs = []
    for _ in range(payload["epochs"]):
        rows = 0
        for i, (_, y, _) in enumerate(loader):  # as weaver's train loop: a new iterator each epoch
            rows += len(y["_label_"])
            if i + 1 >= steps:  # its --steps-per-epoch
                break
        t1 = time.perf_counter()
        epochs.append({"seconds": t1 - t0, "rows": rows})
        t0 = t1
    return {"epochs": epochs}


def _epoch(loader, steps: int) -> dict:
    """One epoch of ``loader`` (a new iterator, as weaver's train loop): its seconds and rows."""
    t0 = time.perf_counter()
    rows = 0
    for i, (_, y, _) in enumerate(loader):
        rows += len(y["_label_"])
        if i + 1 >= steps:
            break
    return {"seconds": time.perf_counter() - t0, "rows": rows}


def _settle(quiet: float = 0.05, limit: float = 3.0) -> None:
    """Wait until this process and its children use no CPU for ``quiet`` seconds (at most ``limit``).

    After an epoch, weaver-core's persistent workers prefetch a few batches of the next one and our
    threads build ahead: either would run during the other side's epoch (about as long as ours)."""
    try:
        import psutil
    except ImportError:
        time.sleep(0.5)
        return
    me = psutil.Process()

    def cpu() -> float:
        total = 0.0
        for proc in [me, *me.children(recursive=True)]:
            try:
                t = proc.cpu_times()
            except psutil.Error:
                continue
            total += t.user + t.system
        return total

    end = time.monotonic() + limit
    last = cpu()
    while time.monotonic() < end:
        time.sleep(quiet)
        now = cpu()
        if now - last < quiet / 10:
            return
        last = now


def child_interleaved(payload: dict) -> dict:
    """Steady epochs of ours and weaver-core's in-memory loader in one process, alternating: both
    loaders are built and run their first epoch, then each round runs one epoch of each (the order
    alternating, each started once both sides are idle), so a burst of load on the shared machine
    hits both sides of a round."""
    import logging

    import torch
    import weaver.train

    import lstm_data.adapters.weaver as ours

    logging.getLogger("weaver").setLevel(logging.ERROR)
    torch.set_num_threads(1)
    steps = payload["steps"]
    loaders = {"ours": ours.train_load(_args("ours", payload["files"], steps, payload["fetch_step"]),
                                       ours.LoaderOptions(threads=WORKERS))[0],
               "weaver_mem": weaver.train.train_load(_args("weaver_mem", payload["files"], steps,
                                                           payload["fetch_step"]))[0]}
    for loader in loaders.values():
        _epoch(loader, steps)  # the first epoch: read and preprocess
    rounds: list[dict] = []
    names = list(loaders)
    for r in range(payload["rounds"]):
        done = {}
        for name in names[r % 2:] + names[:r % 2]:
            _settle()
            done[name] = _epoch(loaders[name], steps)
        rounds.append(done)
    return {"rounds": rounds}


def in_fresh_process(module: str, payload: dict, timeout: float = 600) -> dict:
    """``module``'s ``child(payload)`` run in a fresh interpreter (``python -m module --child``): its result."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), f"{module.replace('.', '_')}_pycache")
    env.setdefault("KERAS_BACKEND", "torch")
    res = subprocess.run([sys.executable, "-m", module, "--child", json.dumps(payload)],
                         capture_output=True, text=True, env=env, cwd=Path(__file__).resolve().parents[1],
                         timeout=timeout)
    for line in res.stdout.splitlines():
        if line.startswith("RESULT"):
            return json.loads(line[6:])
    raise RuntimeError(f"{module} child {payload['side']} failed:\n{res.stderr[-3000:]}")


def _fresh(payload: dict) -> dict:
    return in_fresh_process("bench.weaver_epoch", payload)


def _steps(paths: list[str]) -> int:
    import math

    import uproot

    rows = 0
    for p in paths:
        with uproot.open(p) as fh:
            rows += math.trunc(0.8 * fh["tree"].num_entries)
    return rows // BATCH


def run(quick: bool = False, seed: int = 0, data: BenchData | None = None, rounds: int | None = None,
        formats: tuple[str, ...] | None = None, log=print) -> Report:
    """First and steady epochs of ours and weaver-core's loaders, fresh processes, rotated rounds."""
    report = Report()
    try:
        import torch  # noqa: F401
        import weaver.train  # noqa: F401
    except ImportError as exc:  # weaver-core (and torch) are optional: pip install weaver-core
        log(f"  [{STAGE}] skipped: {exc}")
        return report
    data = data if data is not None else BenchData(quick=quick, seed=seed)
    jets = 3_000 if quick else 25_000
    paths = files(data, jets)
    formats = formats or (("root",) if quick else ("root", "parquet"))
    rounds = rounds or (1 if quick else 3)
    # --quick (CI, < 20 s): weaver-core's in-memory loader, the faster of its two, only
    sides = ("ours", "weaver_mem") if quick else SIDES
    steps = _steps(paths["root"])
    fetch_step = min(1.0, FETCH_JETS / jets)
    med = statistics.median
    for fmt in formats:
        runs: dict[str, list[dict]] = {s: [] for s in sides}
        for r in range(rounds):
            for side in sides[r % len(sides):] + sides[:r % len(sides)]:
                res = _fresh({"side": side, "files": paths[fmt], "steps": steps, "epochs": 3,
                              "fetch_step": fetch_step})
                runs[side].append(res)
            log(f"  [{STAGE}] {fmt} round {r + 1}/{rounds}: " + ", ".join(
                f"{s} " + "/".join(f"{e['seconds']:.2f}" for e in runs[s][-1]["epochs"]) for s in sides))

        def per_row(res: dict, which: str) -> float:
            ep = res["epochs"]
            chosen = [ep[0]] if which == "first" else ep[1:]
            return med(e["seconds"] / max(e["rows"], 1) for e in chosen)

        n = steps * BATCH
        # steady epochs against the in-memory loader: both in one process, alternating epochs
        both = _fresh({"side": "interleaved", "files": paths[fmt], "steps": steps, "fetch_step": fetch_step,
                       "rounds": STEADY_ROUNDS[quick]})["rounds"]
        log(f"  [{STAGE}] {fmt} steady epochs, interleaved: " + ", ".join(
            f"{x['weaver_mem']['seconds']:.2f}/{x['ours']['seconds']:.3f}" for x in both))

        def rate(epoch: dict) -> float:
            return epoch["seconds"] / max(epoch["rows"], 1)

        for which in ("first", "steady"):
            for side in sides:
                report.time(STAGE, f"{fmt}: {side}, {which} epoch ({n} jets)",
                            med(per_row(x, which) for x in runs[side]) * n, items=n, ours=side == "ours")
            for side, label in (("weaver_stream", "streaming"), ("weaver_mem", "in_memory")):
                if side not in sides:
                    continue
                if which == "steady" and side == "weaver_mem":
                    value = med(rate(x["weaver_mem"]) / rate(x["ours"]) for x in both)
                else:
                    value = med(per_row(w, which) / per_row(o, which) for w, o in zip(runs[side], runs["ours"]))
                report.ratio(STAGE, f"{fmt}: {which} epoch vs weaver-core {label}", value)
    from bench import weaver_first  # the first pass over one file against weaver-core's _load_next

    report.merge(weaver_first.run(quick=quick, seed=seed, data=data, log=log))
    return report


def stage_main(doc: str, run, child) -> None:
    """The command line of a jets stage: ``--quick``, ``--rounds``, ``--formats``, and ``--child`` for its
    fresh-process side."""
    parser = argparse.ArgumentParser(allow_abbrev=False, description=doc.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--formats", default=None, help="root,parquet (default: root quick, both full)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print("RESULT" + json.dumps(child(json.loads(args.child))))
        return
    formats = tuple(args.formats.split(",")) if args.formats else None
    print(run(quick=args.quick, rounds=args.rounds, formats=formats).render())


if __name__ == "__main__":
    stage_main(__doc__, run, child)
