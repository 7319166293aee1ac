"""Sharded training for real: DDP over two gloo processes; mid-epoch resume with StatefulDataLoader."""
from __future__ import annotations

import json
import os
import socket
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

from lstm_data import Batches  # noqa: E402
from lstm_data.batching.order.options import Order  # noqa: E402
from lstm_data.adapters.torch import EpochSampler, TorchBatches  # noqa: E402
from tests.adapters.rows import row_dataset, row_spec, rows_in  # noqa: E402

N_ROWS, BATCH, SEED = 1000, 64, 13  # 16 batches per epoch, the last short: 8 per rank with 2 ranks


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ddp_rank(rank: int, world: int, port: int, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        torch.manual_seed(0)
        batches = Batches(row_dataset(N_ROWS), row_spec(), Order(batch_size=BATCH, seed=SEED))
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a sharded sequence raises no "not sharded" warning
            data = TorchBatches(batches.shard(dist.get_rank(), dist.get_world_size()))
        loader = DataLoader(data, batch_size=None, sampler=data.sampler, num_workers=1)
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(
            torch.nn.Flatten(), torch.nn.Linear(4 * 3, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1)))
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        seen: dict[int, list[list[int]]] = {}
        for epoch in range(2):
            for x, y, w in loader:
                seen.setdefault(epoch, []).append(rows_in(x).tolist())
                pred = model(torch.nan_to_num(x["input_png3d"]))
                loss = (w["target_total"] * (pred[:, 0] - y["target_total"][:, 0]) ** 2).mean()
                opt.zero_grad()
                loss.backward()  # gradients all-reduced across the ranks: a missing batch would hang
                opt.step()
        # DDP keeps the replicas equal: every rank ends with the same weights
        flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
        gathered = [torch.zeros_like(flat) for _ in range(world)]
        dist.all_gather(gathered, flat)
        assert all(torch.equal(g, gathered[0]) for g in gathered)
        with open(f"{out}.{rank}", "w") as fh:
            json.dump(seen, fh)
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_ddp_two_gloo_ranks_see_disjoint_shares_of_each_epoch(tmp_path):
    out = str(tmp_path / "seen")
    mp.spawn(_ddp_rank, args=(2, _free_port(), out), nprocs=2, join=True)
    per_rank = [json.load(open(f"{out}.{r}")) for r in range(2)]
    full = Batches(row_dataset(N_ROWS), row_spec(), Order(batch_size=BATCH, seed=SEED))
    for epoch in ("0", "1"):
        lists = [b for seen in per_rank for b in seen[epoch]]
        assert [len(seen[epoch]) for seen in per_rank] == [8, 8]
        rows = np.concatenate(lists)
        assert len(rows) == len(np.unique(rows))  # no row on two ranks
        # the union is the epoch's batches, less the dropped last one (16 batches, 2 ranks: none dropped)
        want = np.concatenate([full.rows_of(i, int(epoch)) for i in range(len(full))])
        np.testing.assert_array_equal(np.sort(rows), np.sort(want))
    assert per_rank[0]["0"] != per_rank[0]["1"]  # a new order each epoch


def test_unsharded_batches_under_distributed_warn(tmp_path):
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'rdv'}", rank=0, world_size=1)
    try:  # one rank: nothing to warn about
        batches = Batches(row_dataset(100), row_spec(), Order(batch_size=10, seed=1))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            TorchBatches(batches)
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("workers", [0, 2])
def test_stateful_dataloader_resumes_mid_epoch(workers):
    sdl = pytest.importorskip("torchdata.stateful_dataloader")

    def loader():
        data = TorchBatches(Batches(row_dataset(N_ROWS), row_spec(), Order(batch_size=BATCH, seed=SEED)))
        return sdl.StatefulDataLoader(data, batch_size=None, sampler=data.sampler, num_workers=workers)

    full = Batches(row_dataset(N_ROWS), row_spec(), Order(batch_size=BATCH, seed=SEED))
    want = [full.rows_of(i, e).tolist() for e in range(3) for i in range(len(full))]
    first, seen = loader(), []
    for _ in range(1):  # epoch 0 whole, then epoch 1 until a preemption after 5 batches
        seen += [rows_in(x).tolist() for x, _, _ in first]
    for step, (x, _, _) in enumerate(first):
        seen.append(rows_in(x).tolist())
        if step == 4:
            state = first.state_dict()
            break
    resumed = loader()
    resumed.load_state_dict(state)
    for _ in range(2):  # the rest of epoch 1, then epoch 2
        seen += [rows_in(x).tolist() for x, _, _ in resumed]
    assert seen == want


def test_epoch_sampler_state_refuses_other_batches():
    a = TorchBatches(Batches(row_dataset(200), row_spec(), Order(batch_size=10, seed=1))).sampler
    b = TorchBatches(Batches(row_dataset(200), row_spec(), Order(batch_size=10, seed=2))).sampler
    with pytest.raises(ValueError, match="seed: state has 1, these batches 2"):
        b.load_state_dict(a.state_dict())
    s = EpochSampler(5, 3)
    keys = iter(s)
    assert [next(keys) for _ in range(2)] == [(3, 0), (3, 1)]
    t = EpochSampler(5)
    t.load_state_dict(s.state_dict())
    assert list(t) == [(3, 2), (3, 3), (3, 4)] and list(t)[0] == (4, 0)
