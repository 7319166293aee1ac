"""weaver-core's JetClass_full.yaml end to end: ``BatchSpec.from_weaver`` against weaver-core's loader.

The data: ``--jets`` JetClass-like jets (:func:`lstm_data.data.examples.weaver_jets.make_jets`, every
branch the config names) in one ROOT file written by uproot. Both sides run in this process,
without worker processes, batches of 512, rounds interleaved (``--runs``):

1. first epoch, from the file: weaver-core's ``SimpleIterDataset`` (test mode, ``in_memory=False``:
   it reads the file, builds the new variables, standardises, clips and pads, then yields the
   rows) through a ``DataLoader``, against ``lstm_data.open`` + ``BatchSpec.from_weaver`` +
   every batch of a ``Batches`` epoch (``shuffle=False``). Every batch of the two is compared
   bitwise (inputs, mask, label), so the figure is for equal tensors;
2. steady epoch, data in RAM: weaver-core's ``SimpleIterDataset(in_memory=True)`` (training
   mode, as ``weaver/train.py`` builds it, ``n // 512`` batches) against a shuffled
   ``Batches`` epoch over the opened file (derived variables computed once, at the first epoch).

Run from a checkout (needs weaver-core, e.g. ``pip install weaver-core``)::

    python bench/weaver_full.py --jets 50000 --runs 3
"""
from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "tests/data/weaver/JetClass_full.yaml"
BATCH = 512
#: threads reading our side (weaver-core's loader runs in this one process too, num_workers=0)
THREADS = 2


def write_file(folder: Path, jets: int) -> str:
    from lstm_data.data.examples.weaver_jets import make_jets, write_jets

    path = folder / "jets.root"
    write_jets(path, make_jets(jets, 1))
    return str(path)


def weaver_loader(path: str, training: bool):
    import torch
    from weaver.utils.dataset import SimpleIterDataset

    logging.getLogger("weaver").setLevel(logging.WARNING)
    data = SimpleIterDataset({"_": [path]}, str(CONFIG), batch_size=BATCH, for_training=training,
                             load_range_and_fraction=((0, 1), 1, 1), fetch_by_files=False, fetch_step=1,
                             infinity_mode=training, in_memory=training, name="bench")
    return torch.utils.data.DataLoader(data, batch_size=BATCH, drop_last=training, num_workers=0)


def ours(path: str, shuffle: bool):
    import lstm_data
    from lstm_data import BatchSpec, Batches, Order

    spec = BatchSpec.from_weaver(CONFIG, observers=False)
    # as weaver-core reads only the branches its config needs, so do we (and on both cores)
    read = lstm_data.ReadOptions(needed=tuple(spec.variables), threads=THREADS)
    return Batches(lstm_data.open(path, read=read), spec, Order(batch_size=BATCH, shuffle=shuffle, seed=0))


def first_epochs(path: str) -> tuple[float, float, str]:
    """Seconds of weaver's and our first epoch from the file, and the comparison of every batch."""
    t0 = time.perf_counter()
    theirs = [(x, y) for x, y, _ in weaver_loader(path, training=False)]
    t_weaver = time.perf_counter() - t0
    t0 = time.perf_counter()
    b = ours(path, shuffle=False)
    mine = [b[i] for i in range(len(b))]
    t_ours = time.perf_counter() - t0
    rows = differing = 0
    for (inputs, targets, _), (x, y) in zip(mine, theirs):
        rows += len(y["_label_"])
        same = all(np.array_equal(inputs[k].view(np.uint32), x[k].numpy().view(np.uint32)) for k in x)
        label = y["_label_"].numpy()  # (B,) int64, as ours
        same = same and targets["_label_"].dtype == label.dtype and np.array_equal(targets["_label_"], label)
        differing += not same
    ok = differing == 0 and len(mine) == len(theirs)
    return t_weaver, t_ours, f"{'EQUAL' if ok else 'DIFFERENT'} ({len(mine)} batches, {rows} rows, " \
                             f"{differing} differing)"


def steady_epochs(path: str, jets: int, runs: int) -> tuple[list[float], list[float]]:
    loader = weaver_loader(path, training=True)
    it = iter(loader)
    n_batches = jets // BATCH
    for _ in range(n_batches):  # weaver's first epoch: load and preprocess
        next(it)
    b = ours(path, shuffle=True)
    for i in range(len(b)):
        b[i]
    t_w, t_o = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        for _ in range(n_batches):
            next(it)
        t_w.append(time.perf_counter() - t0)
        b.on_epoch_end()
        t0 = time.perf_counter()
        for i in range(len(b)):
            b[i]
        t_o.append(time.perf_counter() - t0)
    return t_w, t_o


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n")[0])
    parser.add_argument("--jets", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = write_file(Path(tmp), args.jets)
        firsts = [first_epochs(path) for _ in range(args.runs)]
        t_w = statistics.median(f[0] for f in firsts)
        t_o = statistics.median(f[1] for f in firsts)
        print(f"first epoch ({args.jets} jets, read + preprocess + every batch): weaver-core {t_w:.2f} s, "
              f"lstm_data {t_o:.2f} s: {t_w / t_o:.1f}x; tensors {firsts[0][2]}")
        w, o = steady_epochs(path, args.jets, args.runs)
        print(f"steady epoch (in RAM, shuffled): weaver-core {statistics.median(w):.3f} s, lstm_data "
              f"{statistics.median(o):.3f} s: {statistics.median(w) / statistics.median(o):.1f}x")


if __name__ == "__main__":
    main()
