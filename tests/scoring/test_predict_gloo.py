"""Two real gloo ranks score disjoint shards; their parts open as one dataset equal to one process's run."""
from __future__ import annotations

import datetime
import os
import socket
from pathlib import Path

import numpy as np
import pytest

import lstm_data
from lstm_data import PredictOptions

torch = pytest.importorskip("torch")

import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

from tests.scoring.test_predict import SPEC, Net, _files  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rank(rank: int, world: int, port: int, paths: list[str], out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=60))
    try:
        options = PredictOptions(batch_size=16, flush_every=2, threads=1, output_format="parquet",
                                 rank=dist.get_rank(), world_size=dist.get_world_size())
        written = lstm_data.predict(Net(), paths, SPEC, out, observers=["calE"], options=options)
        assert [p.name for p in written] == [f"scores.part-{rank:05d}-of-{world:05d}.parquet"]
        dist.barrier()  # every part in place before any rank returns
    finally:
        dist.destroy_process_group()


def _table(paths: list[Path]) -> dict[str, np.ndarray]:
    import pyarrow as pa
    import pyarrow.parquet as pq
    table = pa.concat_tables([pq.read_table(p) for p in paths])
    return {n: table.column(n).to_numpy() for n in table.column_names}


@pytest.mark.slow
def test_two_gloo_ranks_write_parts_equal_to_one_process(tmp_path: Path) -> None:
    paths = _files(tmp_path)
    mp.spawn(_rank, args=(2, _free_port(), paths, str(tmp_path / "parts")), nprocs=2, join=True)
    parts = sorted((tmp_path / "parts").glob("scores.part-*-of-00002.parquet"))
    assert len(parts) == 2 and not list((tmp_path / "parts").glob(".lstm_data-predict-*"))
    got = _table(parts)
    single = lstm_data.predict(Net(), paths, SPEC, tmp_path / "one", observers=["calE"],
                               options=PredictOptions(batch_size=16, output_format="parquet"))
    want = _table(single)
    keys = list(zip(got["file_index"].tolist(), got["entry"].tolist()))
    assert len(set(keys)) == len(keys) == len(want["entry"])  # every row once, by keys
    assert keys == sorted(keys)  # in input order
    assert list(got) == list(want)
    for name in want:
        assert got[name].tobytes() == want[name].tobytes(), name  # bitwise
    whole = lstm_data.open([str(p) for p in parts])  # the parts open as one dataset
    assert np.array_equal(whole.scalar("entry"), want["entry"])
    assert whole.scalar("score_trueE").tobytes() == want["score_trueE"].tobytes()
