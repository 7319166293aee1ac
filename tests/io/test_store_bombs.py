"""Hostile stores and servers end in a located error at bounded memory and time: chunks that
inflate to gigabytes (Zstd, Blosc, zarr v2), answers encoded or longer than asked, metadata files
of gigabytes, servers that trickle; and a dataset that lost its manifest is refused."""
from __future__ import annotations

import contextlib
import http.server
import shutil
import threading
import time
import zlib
from pathlib import Path

import numpy as np
import pytest
import zarr

pytest.importorskip("aiohttp")

import lstm_data  # noqa: E402
from lstm_data.data.synthetic import make_dataset  # noqa: E402
from lstm_data.errors import FormatError, RemoteError  # noqa: E402
from lstm_data.io.ours.manifest import MANIFEST_ATTR, MANIFEST_KEY, write_manifest  # noqa: E402
from lstm_data.io.plumbing.remote import open_remote_file  # noqa: E402
from lstm_data.io.plumbing.remote_errors import RemoteSettings  # noqa: E402
from tests.bombs import PEAK_LIMIT_MB, MiB, blosc_bomb, run_measured, with_crc32c, zstd_bomb  # noqa: E402
from tests.http_server import RangeHandler, serve  # noqa: E402
from tests.io.test_l5kit import make_store  # noqa: E402

GiB = 1 << 30
CHUNK = "png/values/c/0/0"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = tmp_path_factory.mktemp("bombs") / "d.zarr"
    make_dataset(300, seed=1).to_zarr(path, chunk_bytes=16 << 10)
    return path


def _bounded(result: dict, kind: type = FormatError) -> None:
    assert result["error"] == kind.__name__ or (result["ours"] and issubclass(kind, RemoteError)), result
    assert result["ours"], result
    assert result["peak_mb"] < PEAK_LIMIT_MB, result


# -- chunks that inflate -------------------------------------------------------------------------

def test_an_l5kit_blosc_chunk_that_inflates_is_refused_by_its_header(tmp_path):
    make_store(tmp_path / "a.zarr", agent_chunk=50)
    chunk = tmp_path / "a.zarr" / "agents" / "1"
    chunk.write_bytes(blosc_bomb(GiB))  # 17 KiB
    start = time.monotonic()
    got = run_measured(f"import lstm_data\nlstm_data.open({str(tmp_path / 'a.zarr')!r}).ragged('agents')")
    _bounded(got)
    assert "chunk 1 of array 'agents' decodes to 1073741824 bytes, expected" in got["message"]
    assert "refused before decoding" in got["message"] and got["file"] == str(chunk)
    assert time.monotonic() - start < 30


def test_a_streamed_zstd_chunk_that_inflates_is_refused_by_its_blocks(tmp_path):
    from zarr.codecs import ZstdCodec

    root = zarr.open_group(tmp_path / "z.zarr", mode="w", zarr_format=3)
    array = root.create_array("x", shape=(4096, 4), chunks=(1024, 4), dtype="f8", compressors=ZstdCodec(level=1),
                              fill_value=0)  # 32 KiB chunks: a 16 KiB file may be one
    array[:] = np.random.default_rng(0).random((4096, 4))
    chunk = tmp_path / "z.zarr" / "x" / "c" / "0" / "0"
    chunk.write_bytes(zstd_bomb(512 * MiB, declared=False))  # no content size: only its blocks bound it
    got = run_measured(f"""
        import zarr
        from lstm_data.io.ours.zarr_chunks import ChunkDecoder
        ChunkDecoder.for_array(zarr.open_array({str(tmp_path / 'z.zarr' / 'x')!r}, mode='r')).read(0, 100)
    """)
    _bounded(got)
    assert "chunk 0 of array 'x' holds Zstd frames that can decode to up to 536,870,912 bytes" in got["message"]
    assert got["file"] == str(chunk)


def test_a_blosc_chunk_that_inflates_in_a_store_read_over_http_is_refused_once(dataset, tmp_path):
    path = shutil.copytree(dataset, tmp_path / "www" / "d.zarr")
    (path / CHUNK).write_bytes(with_crc32c(blosc_bomb(GiB)))
    write_manifest(path)  # recorded anew, as one who forges a store does: only the frame can tell
    with serve(tmp_path / "www", RangeHandler) as (url, _):
        got = run_measured(f"import lstm_data\nlstm_data.open({url + '/d.zarr'!r}).ragged('png')")
    _bounded(got)
    assert "chunk 0 of array 'png/values' decodes to 1073741824 bytes" in got["message"], got
    assert got["file"] == f"{url}/d.zarr/{CHUNK}"


# -- answers the server should not send ----------------------------------------------------------

def _gzip_zeros(n: int) -> bytes:
    packer = zlib.compressobj(1, zlib.DEFLATED, 31)
    zeros = bytes(MiB)
    return b"".join([*(packer.compress(zeros) for _ in range(n // MiB)), packer.flush()])


class _Encoding(RangeHandler):
    """Answers every chunk with ``Content-Encoding: gzip`` and :attr:`body` (gzip of zeros)."""

    body = b""

    def do_GET(self) -> None:
        if "/c/" not in self.path:
            return super().do_GET()
        self.send_response(206 if self.headers.get("Range") else 200)
        if self.headers.get("Range"):
            self.send_header("Content-Range", "bytes 0-99/100")
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)


def test_a_range_answered_gzip_encoded_is_refused_unread(dataset, tmp_path):
    shutil.copytree(dataset, tmp_path / "www" / "d.zarr")
    handler = type("Enc", (_Encoding,), {"body": _gzip_zeros(512 * MiB)})  # 0.5 MiB
    with serve(tmp_path / "www", handler) as (url, _):
        got = run_measured(f"import lstm_data\nlstm_data.open({url + '/d.zarr'!r}).ragged('png')")
    _bounded(got, RemoteError)
    assert "Content-Encoding 'gzip'" in got["message"] and url in got["message"], got


class _Longer(RangeHandler):
    """Answers a range with its Content-Range but 300 MiB of body, and no Content-Length."""

    def do_GET(self) -> None:
        self.send_response(206)
        self.send_header("Content-Range", "bytes 0-99/1000")
        self.send_header("Connection", "close")
        self.end_headers()
        zeros = bytes(MiB)
        with contextlib.suppress(OSError):
            for _ in range(300):
                self.wfile.write(zeros)


def test_an_answer_longer_than_the_range_is_refused_at_one_byte_more(tmp_path):
    (tmp_path / "f.bin").write_bytes(bytes(1000))
    with serve(tmp_path, _Longer) as (url, _):
        got = run_measured(f"""
            from lstm_data.io.plumbing.remote import remote_filesystem
            fs, path = remote_filesystem({url + '/f.bin'!r})
            fs.cat_file(path, start=0, end=100)
        """)
    _bounded(got, RemoteError)
    assert "longer than the 100 bytes asked" in got["message"] and f"{url}/f.bin" in got["message"], got


# -- metadata files of gigabytes -----------------------------------------------------------------

@pytest.mark.parametrize("where", ["local", "http"])
def test_a_metadata_file_of_hundreds_of_megabytes_is_refused_by_its_size(dataset, tmp_path, where):
    path = shutil.copytree(dataset, tmp_path / "www" / "d.zarr")
    meta = path / MANIFEST_KEY / "zarr.json"
    with open(meta, "r+b") as fh:  # sparse: costs no disk
        fh.truncate(400 * MiB)
    with serve(tmp_path / "www", RangeHandler) as (url, _):
        target = str(path) if where == "local" else f"{url}/d.zarr"
        got = run_measured(f"import lstm_data\nlstm_data.open({target!r})")
    _bounded(got)
    assert f"store file '{MANIFEST_KEY}/zarr.json' is " in got["message"], got
    assert "more than any metadata file of a store may be (67,108,864 bytes)" in got["message"], got
    assert got["file"] == f"{target}/{MANIFEST_KEY}/zarr.json"


# -- a server that trickles ----------------------------------------------------------------------

class _Trickle(RangeHandler):
    """Sends the headers of a 200-byte answer, then one byte every 0.2 s."""

    def do_GET(self) -> None:
        self.send_response(206)
        self.send_header("Content-Range", "bytes 0-199/1000")
        self.send_header("Content-Length", "200")
        self.end_headers()
        with contextlib.suppress(OSError):
            for _ in range(200):
                if type(self).stop.wait(0.2):
                    return
                self.wfile.write(b"\0")
                self.wfile.flush()


def test_a_server_that_trickles_is_a_remote_error_naming_the_url(tmp_path):
    (tmp_path / "f.bin").write_bytes(bytes(1000))
    with serve(tmp_path, _Trickle) as (url, _):
        remote = RemoteSettings(connect_timeout=0.5, read_timeout=0.5, retries=0)  # 0.2 s per byte: never idle
        start = time.monotonic()
        with pytest.raises(RemoteError, match=r"bytes came in .* slower than 64 KiB/s") as err:
            open_remote_file(f"{url}/f.bin", remote).read(200)
    assert time.monotonic() - start < 4
    assert err.value.url == f"{url}/f.bin"


# -- a dataset cannot drop its checks ------------------------------------------------------------

def test_a_dataset_whose_manifest_was_deleted_is_refused(dataset, tmp_path):
    path = shutil.copytree(dataset, tmp_path / "d.zarr")
    assert zarr.open_group(path, mode="r").attrs["lstm_data_layout"]["requires"] == ["manifest"]
    shutil.rmtree(path / MANIFEST_KEY)
    root = zarr.open_group(path, mode="r+")
    del root.attrs[MANIFEST_ATTR]  # and its record: the layout still requires it
    with pytest.raises(FormatError, match=r"manifest \(_lstm_data_manifest/zarr.json\) is missing, but its "
                                          r"metadata \('requires' of the root attribute lstm_data_layout\)") as err:
        lstm_data.open(path)
    assert err.value.file == str(path)

