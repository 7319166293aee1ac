"""A batch store whose chunk inflates to a gigabyte is refused before it is decoded, at bounded
memory; a store at a URL is read with the remote options given to ``open_batches``."""
from __future__ import annotations

import shutil
import time

import pytest

from lstm_data import BatchSpec, ReadOptions, open_batches
from lstm_data.batching.order.options import Order
from lstm_data.errors import RemoteError
from lstm_data.io.ours.manifest import write_manifest
from lstm_data.store.write import precompute
from tests.bombs import PEAK_LIMIT_MB, run_measured, with_crc32c, zstd_bomb
from tests.helpers import EXAMPLES

DS_ROWS, DS_SEED = 600, 3
ARRAY = "data/input_png3d"


@pytest.fixture(scope="module")
def store(ds, tmp_path_factory):
    path = tmp_path_factory.mktemp("bombs") / "b.zarr"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("lstm_data.store.write._CHUNK_BYTES", 64 << 10)
        precompute(ds, BatchSpec.from_toml(EXAMPLES / "numu_v3.toml"), path, Order(batch_size=100, seed=1),
                   progress=False)
    return path


def test_a_zstd_chunk_that_inflates_to_a_gigabyte_is_refused_before_decoding(store, tmp_path):
    path = shutil.copytree(store, tmp_path / "b.zarr")
    chunk = path / ARRAY / "c" / "0"
    chunk.write_bytes(with_crc32c(zstd_bomb(1 << 30)))  # 32 KiB
    write_manifest(path)  # recorded anew, as one who forges a store does: only the frame can tell
    start = time.monotonic()
    got = run_measured(f"""
        import lstm_data
        stored = lstm_data.open_batches({str(path)!r})
        for i in range(len(stored)):
            stored[i]
    """)
    assert got["error"] == "FormatError" and got["peak_mb"] < PEAK_LIMIT_MB, got
    assert f"chunk 0 of array '{ARRAY}' decodes to 1073741824 bytes" in got["message"], got
    assert "refused before decoding" in got["message"] and got["file"] == str(chunk), got
    assert time.monotonic() - start < 30


def test_open_batches_reads_a_url_with_the_remote_options_given(store, tmp_path):
    from tests.http_server import MisbehavingHandler, serve

    pytest.importorskip("aiohttp")
    shutil.copytree(store, tmp_path / "www" / "b.zarr")
    with serve(tmp_path / "www", MisbehavingHandler) as (url, _):
        start = time.monotonic()
        with pytest.raises(RemoteError, match=r"read_timeout = 0.5 s") as err:
            open_batches(f"{url}/stall/b.zarr", read=ReadOptions(read_timeout=0.5, retries=0))
        assert time.monotonic() - start < 5
    assert err.value.url.startswith(f"{url}/stall/b.zarr")
