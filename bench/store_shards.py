"""A precomputed store dealt to ranks: balance and exact resumption on another world size.

Run from a checkout::

    python bench/store_shards.py --rows 50000 --world 8

Precomputes numu-like data (length buckets, element-budget batches) to a temporary
store and prints, for epoch 1 (a permuted epoch of the stored batches):

* the spread of real elements across ranks, ``(max - min) / mean``, for the
  store's deal (balanced rounds over the recorded counts) and for consecutive runs;
* the step overhead: the sum over steps of the step's largest batch, over a rank's
  share of the epoch's elements (1.0: no rank waits for another at a step);
* a world of ``--world`` ranks stopped after a quarter of the epoch and resumed on
  ``world - 3`` and ``world + 2`` ranks: stored batches served twice (must be 0) and
  left over (the new world's remainder, fewer than its ranks).
"""
from __future__ import annotations

import argparse
import os
import tempfile

import numpy as np

from lstm_data import BatchSpec, Order, Ragged, Scalars, open_batches, precompute
from lstm_data.data.synthetic import PNG3D_VARS, SLICE_VARS, make_dataset


def _spread(values: np.ndarray) -> float:
    return float((values.max() - values.min()) / values.mean())


def _resume(path: str, world: int, new_world: int, epoch: int) -> tuple[int, int]:
    old = [open_batches(path).shard(r, world) for r in range(world)]
    for s in old:
        s.set_epoch(epoch)
    steps = len(old[0]) // 4
    seen = [int(p) for s in old for p in s.parent_indices()[:steps]]
    state = old[0].state_at(epoch, steps)
    new = [open_batches(path).shard(r, new_world) for r in range(new_world)]
    for s in new:
        s.load_state_dict(state)
    seen += [int(p) for s in new for p in s.parent_indices()]
    return len(seen) - len(set(seen)), len(new[0].batches) - len(set(seen))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--world", type=int, default=8)
    parser.add_argument("--batch", type=int, default=512)
    args = parser.parse_args()
    ds = make_dataset(args.rows, seed=1)
    spec = BatchSpec(inputs={"input_slice": Scalars(SLICE_VARS), "input_png3d": Ragged(PNG3D_VARS[:4], max_len=20)},
                     targets={"target_total": Scalars(["trueE"])})
    orders = {
        "buckets": Order(batch_size=args.batch, seed=1, bucket_by="input_png3d"),
        "budget": Order(batch_size=args.batch, seed=1, bucket_by="input_png3d", max_elements=4 * args.batch),
    }
    w, epoch = args.world, 1
    print(f"{args.rows} rows, batch {args.batch}, {w} ranks, epoch {epoch} of the store")
    print(f"{'order':8} {'batches':>7} {'spread rounds':>13} {'spread runs':>11} {'step rounds':>11} "
          f"{'step runs':>9} {'twice/left ' + str(w - 3):>14} {'twice/left ' + str(w + 2):>14}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, order in orders.items():
            path = os.path.join(tmp, f"{name}.zarr")
            precompute(ds, spec, path, order, progress=False, threads=2)
            stored = open_batches(path)
            costs = stored.batch_elements(epoch).astype(np.float64)
            shards = [open_batches(path).shard(r, w) for r in range(w)]
            lanes = np.stack([s.parent_indices(epoch) for s in shards])
            n = lanes.shape[1]
            run_lanes = np.arange(n * w).reshape(w, n)
            rounds, runs = costs[lanes].sum(axis=1), costs[run_lanes].sum(axis=1)
            step_rounds = costs[lanes].max(axis=0).sum() / (costs[lanes].sum() / w)
            step_runs = costs[run_lanes].max(axis=0).sum() / (costs[run_lanes].sum() / w)
            a = _resume(path, w, max(1, w - 3), epoch)
            b = _resume(path, w, w + 2, epoch)
            print(f"{name:8} {len(stored):7d} {_spread(rounds):13.4f} {_spread(runs):11.4f} {step_rounds:11.3f} "
                  f"{step_runs:9.3f} {f'{a[0]}/{a[1]}':>14} {f'{b[0]}/{b[1]}':>14}")


if __name__ == "__main__":
    main()
