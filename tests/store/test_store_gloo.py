"""A precomputed store trained on by real gloo ranks: 4 ranks stopped after K steps, resumed on 3."""
from __future__ import annotations

import datetime
import json
import os
import socket

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

from lstm_data import Batches, open_batches, precompute  # noqa: E402
from lstm_data.adapters.torch import TorchBatches  # noqa: E402
from lstm_data.batching.order.options import Order  # noqa: E402
from tests.adapters.rows import row_dataset, row_spec, rows_in  # noqa: E402

N_ROWS, K = 1500, 3
ORDER = Order(batch_size=64, seed=13, bucket_by="input_png3d", max_elements=128)  # budget batches


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rank(rank: int, world: int, port: int, store: str, out: str, state_path: str, steps: int) -> None:
    """Train on this rank's share of the store: ``steps`` steps then save, or (-1) resume and run two epochs."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    # a rank left without a step would wait in all_reduce: fail in a minute rather than hang
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=60))
    try:
        data = TorchBatches(open_batches(store, order=ORDER).shard(dist.get_rank(), dist.get_world_size()))
        loader = DataLoader(data, batch_size=None, sampler=data.sampler)
        if steps < 0:
            data.sampler.load_state_dict(json.load(open(state_path)))
        seen: list[list[list[int]]] = []
        for _ in range(1 if steps >= 0 else 2):  # the interrupted epoch, then (resumed) the next one
            seen.append([])
            for x, _, _ in loader:
                seen[-1].append(rows_in(x).tolist())
                count = torch.tensor([1])
                dist.all_reduce(count)  # a collective per step: a rank with fewer steps would hang
                assert int(count) == world
                if len(seen[-1]) == steps:
                    break
        if rank == world - 1 and steps >= 0:
            with open(state_path + ".tmp", "w") as fh:
                json.dump(data.sampler.state_dict(), fh)
            os.replace(state_path + ".tmp", state_path)
        with open(f"{out}.{world}.{rank}", "w") as fh:
            json.dump(seen, fh)
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_gloo_ranks_stopped_on_4_resume_a_store_on_3(tmp_path):
    store, out, state = str(tmp_path / "b.zarr"), str(tmp_path / "seen"), str(tmp_path / "state.json")
    precompute(row_dataset(N_ROWS), row_spec(), store, ORDER, progress=False)
    mp.spawn(_rank, args=(4, _free_port(), store, out, state, K), nprocs=4, join=True)
    mp.spawn(_rank, args=(3, _free_port(), store, out, state, -1), nprocs=3, join=True)
    old = [b for r in range(4) for b in json.load(open(f"{out}.4.{r}"))[0]]
    new = [json.load(open(f"{out}.3.{r}")) for r in range(3)]
    assert len(old) == 4 * K and len({len(n[0]) for n in new}) == 1  # equal steps on every rank
    served = [tuple(b) for b in old + [b for n in new for b in n[0]]]
    assert len(set(served)) == len(served)  # no stored batch twice in the epoch
    live = Batches(row_dataset(N_ROWS), row_spec(), ORDER)  # the store holds its epoch 0
    n = len(live)
    everything = {tuple(live.rows_of(i, 0).tolist()) for i in range(n)}
    assert set(served) <= everything and len(everything - set(served)) == (n - 4 * K) % 3
    fresh = [open_batches(store).shard(r, 3) for r in range(3)]  # epoch 1: a fresh world of 3's
    for r, shard in enumerate(fresh):
        shard.set_epoch(1)
        assert new[r][1] == [rows_in(b[0]).tolist() for b in shard]
    rows = np.concatenate([np.asarray(b) for n_ in new for b in n_[1]])
    assert len(rows) == len(np.unique(rows))
