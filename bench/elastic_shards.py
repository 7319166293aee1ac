"""Shards, elastic resumption and sampling on numu-like data: balance, cost, exactness.

Run from a checkout::

    python bench/elastic_shards.py --rows 200000 --world 8

Prints, per order (full shuffle, length buckets, element-budget batches):

* the spread of real elements (rows, or the bucketed field's prongs) across ranks
  in one epoch, ``(max - min) / mean``, for the dealing used (balanced rounds) and
  for consecutive runs of the same order;
* the step overhead: the sum over steps of the largest batch of the step, over the
  epoch's elements per rank (1.0: no rank ever waits for another at a step);
* the time to deal one epoch (the first batch of a rank's share, order included);
* a resume of a world of ``--world`` ranks on ``world - 3`` and ``world + 2``
  ranks after a quarter of the epoch: rows seen twice (must be 0) and rows missed;

and for ``Order(sample=...)`` on a 1:20 labelled copy, the draws per class and the
time to draw an epoch.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars
from lstm_data.batching.epochs.shard import batch_elements
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.data.synthetic import PNG3D_VARS, SLICE_VARS, make_dataset


def _spread(values: np.ndarray) -> float:
    return float((values.max() - values.min()) / values.mean())


def _resume(ds: InMemoryDataset, spec: BatchSpec, order: Order, world: int, new_world: int) -> tuple[int, int]:
    old = [Batches(ds, spec, order).shard(r, world) for r in range(world)]
    steps = len(old[0]) // 4
    seen = [s.rows_of(i) for s in old for i in range(steps)]
    for s in old:
        s._next_batch = steps  # as after `steps` batches of iter()
    state = old[0].state_dict()
    new = [Batches(ds, spec, order).shard(r, new_world) for r in range(new_world)]
    for s in new:
        s.load_state_dict(state)
    seen += [s.rows_of(i) for s in new for i in range(s.resume_point[1], len(s))]
    rows = np.concatenate(seen)
    return len(rows) - len(np.unique(rows)), len(ds) - len(np.unique(rows))


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--world", type=int, default=8)
    parser.add_argument("--batch", type=int, default=512)
    args = parser.parse_args()
    ds = make_dataset(args.rows, seed=1)
    spec = BatchSpec(inputs={"input_slice": Scalars(SLICE_VARS), "input_png3d": Ragged(PNG3D_VARS, max_len=20)},
                     targets={"target_total": Scalars(["trueE"])})
    orders = {
        "shuffle": Order(batch_size=args.batch, seed=1),
        "buckets": Order(batch_size=args.batch, seed=1, bucket_by="input_png3d"),
        "budget": Order(batch_size=args.batch, seed=1, bucket_by="input_png3d", max_elements=4 * args.batch),
    }
    w = args.world
    print(f"{args.rows} rows, batch {args.batch}, {w} ranks")
    print(f"{'order':8} {'batches':>7} {'spread rounds':>13} {'spread runs':>11} {'step rounds':>11} "
          f"{'step runs':>9} {'deal s':>7} "
          f"{'twice/missed ' + str(w - 3):>16} {'twice/missed ' + str(w + 2):>16}")
    for name, order in orders.items():
        try:
            full = Batches(ds, spec, order)
        except Exception as exc:  # e.g. max_elements in a build without budget batches
            print(f"{name:8} skipped: {exc}")
            continue
        costs = batch_elements(full, 0).astype(np.float64)
        t0 = time.perf_counter()
        shards = [Batches(ds, spec, order).shard(r, w) for r in range(w)]
        shards[0].rows_of(0, 0)
        deal_s = time.perf_counter() - t0
        rounds = np.array([costs[s.parent_indices(0)].sum() for s in shards])
        n = len(full) // w
        runs = np.array([costs[r * n:(r + 1) * n].sum() for r in range(w)])
        a = _resume(ds, spec, order, w, max(1, w - 3))
        b = _resume(ds, spec, order, w, w + 2)
        lanes = np.stack([s.parent_indices(0) for s in shards])
        step_rounds = costs[lanes].max(axis=0).sum() / (costs[lanes].sum() / w)
        run_lanes = np.arange(n * w).reshape(w, n)
        step_runs = costs[run_lanes].max(axis=0).sum() / (costs[run_lanes].sum() / w)
        print(f"{name:8} {len(full):7d} {_spread(rounds):13.4f} {_spread(runs):11.4f} {step_rounds:11.3f} "
              f"{step_runs:9.3f} {deal_s:7.3f} "
              f"{f'{a[0]}/{a[1]}':>16} {f'{b[0]}/{b[1]}':>16}")
    label = (np.arange(args.rows) % 21 == 0).astype(np.float32)
    labelled = InMemoryDataset({**{k: ds.scalar(k) for k in ds.scalar_names}, "label": label},
                               {g: ds.group(g) for g in ds.groups})
    sampled = Batches(labelled, spec, Order(batch_size=args.batch, seed=1, sample={"classes": "label"}))
    t0 = time.perf_counter()
    sampled.rows_of(0, 5)
    draw_s = time.perf_counter() - t0
    print(f"sample classes=label (1:20): draws per class {sampled.draws(5)}, epoch drawn in {draw_s:.3f} s")


if __name__ == "__main__":
    main()
