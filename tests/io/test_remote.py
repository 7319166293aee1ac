"""zarr stores served over HTTP (a real server on 127.0.0.1): open, batches, precomputed stores."""
from __future__ import annotations

import functools
import http.server
import threading
from collections import Counter

import numpy as np
import pytest

pytest.importorskip("aiohttp")

import lstm_data  # noqa: E402
from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars, open_batches  # noqa: E402
from lstm_data.cli import main  # noqa: E402
from lstm_data.data.synthetic import PNG3D_VARS, SLICE_VARS, make_dataset  # noqa: E402
from lstm_data.errors import FormatError  # noqa: E402
from lstm_data.io.ours.zarr import ZarrDataset  # noqa: E402
from lstm_data.store.write import precompute  # noqa: E402
from tests.helpers import assert_same_batch  # noqa: E402

N_ROWS = 4000


class _Counting(http.server.SimpleHTTPRequestHandler):
    gets: Counter = Counter()

    def log_message(self, *args) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        type(self).gets[self.path] += 1
        super().do_GET()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("www")
    data = make_dataset(N_ROWS, seed=7)
    data.to_zarr(root / "d.zarr", chunk_bytes=32 * 1024)
    (root / "file.h5").write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(100))
    handler = type("Handler", (_Counting,), {"gets": Counter()})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", root, data, handler.gets
    server.shutdown()


def _spec() -> BatchSpec:
    return BatchSpec(inputs={"input_slice": Scalars(SLICE_VARS), "input_png3d": Ragged(PNG3D_VARS[:5], max_len=10)},
                     targets={"target_total": Scalars(["trueE"])})


def test_open_a_url_equals_the_local_store(served):
    url, root, data, _ = served
    remote = lstm_data.open(f"{url}/d.zarr")
    local = ZarrDataset(root / "d.zarr")
    assert isinstance(remote, ZarrDataset) and len(remote) == N_ROWS
    rows = np.random.default_rng(0).integers(0, N_ROWS, 300)
    for g in data.groups:
        for a, b in zip(remote.ragged(g, rows), local.ragged(g, rows)):
            np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(remote.scalar("trueE"), data.scalar("trueE"))


def test_block_shuffle_fetches_each_chunk_at_most_twice_per_epoch(served):
    url, _, _, gets = served
    remote = lstm_data.open(f"{url}/d.zarr")
    b = Batches(remote, _spec(), Order(batch_size=100, seed=3, shuffle="block", read_ahead=False))
    assert b.shuffle == "block"
    gets.clear()
    for _ in b:
        pass
    chunks = {k: n for k, n in gets.items() if "/png/values/c/" in k}
    n_chunks = -(-int(remote.offsets("png")[-1]) // remote.value_chunk_len("png"))
    assert len(chunks) == n_chunks  # every values chunk fetched ...
    assert max(chunks.values()) <= 2  # ... at most twice in the epoch
    assert sum(chunks.values()) < 1.6 * n_chunks


def test_precomputed_store_at_a_url(served, tmp_path):
    url, root, data, _ = served
    precompute(data, _spec(), root / "b.zarr", Order(batch_size=500, seed=2), progress=False)
    stored = open_batches(f"{url}/b.zarr", order=Order(batch_size=500, seed=2), spec=_spec())
    live = Batches(data, _spec(), Order(batch_size=500, seed=2))
    assert len(stored) == len(live)
    for i in (0, len(live) - 1):
        assert_same_batch(stored[i], live[i])


def test_inspect_a_url(served, capsys):
    url, *_ = served
    assert main(["inspect", f"{url}/d.zarr"]) == 0
    assert f"{N_ROWS}" in capsys.readouterr().out


def test_remote_errors_name_the_url(served):
    url, root, _, _ = served
    with pytest.raises(FileNotFoundError, match="nothing at .*/nope.zarr"):
        lstm_data.open(f"{url}/nope.zarr")
    with pytest.raises(FormatError, match="only zarr v3 stores"):
        lstm_data.open(f"{url}/file.h5")
    with pytest.raises(ImportError, match="gcsfs"):
        lstm_data.open("gs://bucket/data.zarr")


def test_a_chunk_lost_on_the_server_is_a_format_error(served, tmp_path):
    url, root, data, _ = served
    data.take(np.arange(500)).to_zarr(root / "lost.zarr", chunk_bytes=16 * 1024)
    victim = sorted((root / "lost.zarr" / "png" / "values" / "c").iterdir())[1]
    for f in victim.rglob("*") if victim.is_dir() else [victim]:
        if f.is_file():
            f.unlink()
    remote = lstm_data.open(f"{url}/lost.zarr")
    with pytest.raises(FormatError, match="missing"):
        remote.ragged("png")
