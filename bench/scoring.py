"""Scoring runs (``lstm_data.predict``): the loader and writer's share of the wall time, and the
whole run against weaver-core's ``--predict``.

The data: the JetClass-like files of :mod:`bench.weaver_epoch` (ROOT, zlib level 1, and the
same files converted to Parquet by weaver-core), read with weaver-core's ``JetClass_full.yaml``
(``BatchSpec.from_weaver``: 4 inputs of 128 particles, 10 observers), batch 512.

* ``overhead``: a ParticleNet-Lite-sized network (:mod:`bench.scoring_nets`, 28k parameters,
  two EdgeConv blocks with k = 7) on CPU, one torch thread. The run (open the files, score every
  jet with 2 batch-building threads, write Parquet with the observers) against the same forward
  passes on the same batches already in memory; the figure is ``(run - forward passes) / run``,
  the share of the wall time the loader and writer add (goal <= 5 %). Rounds alternate the two;
  the median of per-round shares.
* ``vs weaver-core --predict``: a trivial network (a linear layer on mean particle features:
  the run is loader-bound), each side in a fresh process (imports before the clock): ours,
  ``lstm_data.predict`` over the files (2 threads, Parquet out); weaver-core's, its own
  ``weaver.train._main`` with ``--predict --data-test <files> --num-workers 2 --predict-output
  <x>.parquet`` (weaver's test loader, its evaluation loop and its Parquet writer), after the
  argument defaults its ``main()`` fills. Rotated rounds, the median of per-round ratios.

Run alone::

    python -m bench.scoring [--quick] [--rounds 3] [--formats root,parquet]
"""
from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path

from bench import weaver_epoch
from bench.data import BenchData
from bench.timing import Report

STAGE = "scoring"
CONFIG = weaver_epoch.CONFIG
NETS = Path(__file__).with_name("scoring_nets.py")
BATCH = 512
THREADS = 2  # our batch-building threads, weaver's --num-workers
OBSERVERS = ["jet_pt", "jet_eta", "jet_phi", "jet_energy", "jet_nparticles", "jet_sdmass",
             "jet_tau1", "jet_tau2", "jet_tau3", "jet_tau4"]


def _opened(paths: list[str]):
    import lstm_data
    from lstm_data import ReadOptions

    spec = lstm_data.BatchSpec.from_weaver(CONFIG, observers=False)
    read = ReadOptions(needed=(*spec.variables, *OBSERVERS), threads=THREADS)
    return spec, (lambda: lstm_data.open(paths, read=read))


def _predict(model, paths: list[str], out: Path, batch: int) -> float:
    """Seconds of one whole run: open, score, write."""
    import lstm_data

    spec, open_ = _opened(paths)
    t0 = time.perf_counter()
    lstm_data.predict(model, open_(), spec, out, observers=OBSERVERS,
                      options=lstm_data.PredictOptions(batch_size=batch, threads=THREADS, resume=False,
                                                       output_format="parquet"))
    seconds = time.perf_counter() - t0
    shutil.rmtree(out, ignore_errors=True)
    return seconds


def overhead(paths: list[str], batch: int, rounds: int, log=print) -> tuple[float, float, float]:
    """Median share of the run the loader and writer add, and median run and forward seconds."""
    import torch

    import lstm_data
    from bench.scoring_nets import make

    torch.set_num_threads(1)
    net = make("particlenet_lite")
    spec, open_ = _opened(paths)
    batches = lstm_data.Batches(open_(), spec.replace(targets={}),
                                lstm_data.Order(batch_size=batch, shuffle=False, drop_last=False))
    ready = [batches[i][0] for i in range(len(batches))]  # the same batches, in memory before the clock

    def forward(upto: int | None = None) -> float:
        t0 = time.perf_counter()
        with torch.inference_mode():
            for inputs in ready[:upto]:
                net(*[torch.from_numpy(inputs[n]) for n in spec.input_names])
        return time.perf_counter() - t0

    forward(1)  # warm-up
    shares, runs, passes = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            order = ("run", "fwd") if r % 2 == 0 else ("fwd", "run")
            got = {k: (_predict(net, paths, Path(tmp) / f"o{r}", batch) if k == "run" else forward())
                   for k in order}
            shares.append((got["run"] - got["fwd"]) / got["run"])
            runs.append(got["run"])
            passes.append(got["fwd"])
            log(f"  [{STAGE}] overhead round {r + 1}/{rounds}: run {got['run']:.2f} s, "
                f"forward passes {got['fwd']:.2f} s, share {shares[-1]:.1%}")
    med = statistics.median
    return med(shares), med(runs), med(passes)


# -- the trivial network against weaver-core's --predict, each side in a fresh process -------------
def child(payload: dict) -> dict:
    import logging

    import awkward  # noqa: F401  (imports before the clock, on both sides)
    import torch
    import uproot  # noqa: F401
    import weaver.train

    import lstm_data  # noqa: F401
    from bench.scoring_nets import make

    logging.getLogger("weaver").setLevel(logging.ERROR)
    torch.set_num_threads(1)
    paths, out = payload["files"], Path(payload["out"])
    if payload["side"] == "ours":
        return {"seconds": _predict(make("trivial"), paths, out, BATCH)}
    argv = ["--predict", "--data-test", *paths, "--data-config", str(CONFIG), "--network-config", str(NETS),
            "--network-option", "net", "'trivial'", "--model-prefix", payload["state"],
            "--predict-output", str(out / "pred.parquet"), "--batch-size", str(BATCH),
            "--num-workers", str(THREADS), "--gpus", ""]
    args = weaver.train.parser.parse_args(argv)
    # the defaults weaver.train.main() fills in before it calls _main
    args.batch_size_val = args.batch_size_val or args.batch_size
    args.batch_size_test = args.batch_size_test or args.batch_size
    args.data_config_val = args.data_config_val or args.data_config
    args.data_config_test = args.data_config_test or args.data_config
    args.fetch_step_val = args.fetch_step if args.fetch_step_val is None else args.fetch_step_val
    args.data_split_val = args.data_split_num if args.data_split_val is None else args.data_split_val
    args.in_memory_val = args.in_memory if args.in_memory_val is None else args.in_memory_val
    args.local_rank = None
    t0 = time.perf_counter()
    weaver.train._main(args)
    seconds = time.perf_counter() - t0
    if not (out / "pred.parquet").exists():
        raise RuntimeError("weaver-core's --predict wrote no output")
    shutil.rmtree(out, ignore_errors=True)
    return {"seconds": seconds}


def _fresh(payload: dict) -> dict:
    return weaver_epoch.in_fresh_process("bench.scoring", payload, timeout=900)


def versus_weaver(paths: list[str], rounds: int, log=print) -> float:
    """Median of per-round (weaver-core's --predict seconds / ours), trivial network."""
    import torch

    from bench.scoring_nets import make

    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        state = str(Path(tmp) / "trivial.pt")
        torch.save(make("trivial").state_dict(), state)
        for r in range(rounds):
            sides = ("ours", "weaver") if r % 2 == 0 else ("weaver", "ours")
            got = {s: _fresh({"side": s, "files": paths, "out": str(Path(tmp) / f"{s}{r}"), "state": state})
                   for s in sides}
            ratios.append(got["weaver"]["seconds"] / got["ours"]["seconds"])
            log(f"  [{STAGE}] vs weaver round {r + 1}/{rounds}: ours {got['ours']['seconds']:.2f} s, "
                f"weaver-core --predict {got['weaver']['seconds']:.2f} s")
    return statistics.median(ratios)


def run(quick: bool = False, seed: int = 0, data: BenchData | None = None, rounds: int | None = None,
        formats: tuple[str, ...] | None = None, log=print) -> Report:
    report = Report()
    try:
        import torch  # noqa: F401
        import weaver.train  # noqa: F401
    except ImportError as exc:  # torch and weaver-core are optional
        log(f"  [{STAGE}] skipped: {exc}")
        return report
    data = data if data is not None else BenchData(quick=quick, seed=seed)
    # ParticleNet-Lite costs ~5 ms a jet on one core: its files are the small ones in both modes
    small = weaver_epoch.files(data, 1_000 if quick else 3_000)
    loader_bound = small if quick else weaver_epoch.files(data, 25_000)
    formats = formats or (("root",) if quick else ("root", "parquet"))
    rounds = rounds or (1 if quick else 3)
    for fmt in formats:
        paths = small[fmt][:1]
        batch = 250 if quick else BATCH
        share, run_s, fwd_s = overhead(paths, batch, 1 if quick else 2 * rounds, log)
        jets = len(paths) * (1_000 if quick else 3_000)
        report.time(STAGE, f"{fmt}: ParticleNet-Lite run ({jets} jets)", run_s, items=jets, ours=True)
        report.time(STAGE, f"{fmt}: ParticleNet-Lite forward passes only ({jets} jets)", fwd_s, items=jets)
        report.ratio(STAGE, f"{fmt}: loader+writer share of a ParticleNet-Lite run", share)
        report.ratio(STAGE, f"{fmt}: trivial network, whole run vs weaver-core --predict",
                     versus_weaver(loader_bound[fmt], rounds, log))
    return report


if __name__ == "__main__":
    weaver_epoch.stage_main(__doc__, run, child)
