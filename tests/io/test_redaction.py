"""Credentials in URLs are used to read, never shown: errors, logs, repr/str, notes, the CLI.

A real HTTP server on 127.0.0.1 serves a store; the URL carries ``user:secret@``
(aiohttp sends it as basic auth, the server ignores it).
"""
from __future__ import annotations

import functools
import http.server
import logging
import shutil
import subprocess
import sys
import threading

import pytest

pytest.importorskip("aiohttp")

import lstm_data  # noqa: E402
from lstm_data import BatchSpec, FormatError  # noqa: E402
from lstm_data._util.redact import redact_options  # noqa: E402
from lstm_data.data.synthetic import make_dataset  # noqa: E402
from lstm_data.errors import redact  # noqa: E402
from lstm_data.store.write import precompute  # noqa: E402
from tests.helpers import EXAMPLES, without_manifest  # noqa: E402

SECRET = "s3cr3tPassw0rd"


@pytest.mark.parametrize("url, shown", [
    (f"https://alice:{SECRET}@example.org/d.zarr", "https://***@example.org/d.zarr"),
    (f"https://{SECRET}@github.com/x", "https://***@github.com/x"),
    (f"https://h/d.zarr?token={SECRET}&n=1", "https://h/d.zarr?token=***&n=1"),
    (f"https://b.s3.amazonaws.com/k?X-Amz-Credential={SECRET}&X-Amz-Signature={SECRET}&x=2",
     "https://b.s3.amazonaws.com/k?X-Amz-Credential=***&X-Amz-Signature=***&x=2"),
    (f"see s3://key:{SECRET}@bucket/a and gs://b/c?access_token={SECRET}#f",
     "see s3://***@bucket/a and gs://b/c?access_token=***#f"),
    ("/local/path/d.zarr", "/local/path/d.zarr"),
])
def test_redact(url, shown):
    assert redact(url) == shown


def test_redact_storage_options():
    opts = {"key": "AKIA", "secret": SECRET, "anon": False,
            "client_kwargs": {"endpoint_url": f"http://u:{SECRET}@minio:9000", "region_name": "eu"}}
    out = redact_options(opts)
    assert SECRET not in repr(out) and "AKIA" not in repr(out)
    assert out["anon"] is False and out["client_kwargs"]["region_name"] == "eu"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("www")
    data = make_dataset(1500, seed=3)
    data.to_zarr(root / "d.zarr", chunk_bytes=8 << 10)
    precompute(data, BatchSpec.from_toml(EXAMPLES / "numu_v3.toml"), root / "b.zarr", progress=False)
    handler = type("Quiet", (http.server.SimpleHTTPRequestHandler,), {"log_message": lambda *a: None})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://alice:{SECRET}@127.0.0.1:{server.server_address[1]}", root
    server.shutdown()


def test_open_shows_no_credentials(served, caplog):
    base, _ = served
    with caplog.at_level(logging.DEBUG, logger="lstm_data"):
        ds = lstm_data.open(f"{base}/d.zarr")
        ds.ragged("png", [0, 5, 900])
    assert len(ds) == 1500
    assert any("opened" in r.getMessage() for r in caplog.records)
    shown = " ".join([caplog.text, repr(ds), str(ds.source), " ".join(ds.notes)])
    assert SECRET not in shown and "alice" not in shown
    batches = lstm_data.open_batches(f"{base}/b.zarr")
    assert SECRET not in repr(batches) and "***@127.0.0.1" in repr(batches)


def test_errors_show_no_credentials(served, tmp_path):
    base, root = served
    with pytest.raises(FileNotFoundError) as err:
        lstm_data.open(f"{base}/missing.zarr")
    assert SECRET not in str(err.value) and "***@127.0.0.1" in str(err.value)
    damaged = shutil.copytree(root / "d.zarr", root / "damaged.zarr")
    chunk = next((damaged / "png" / "values" / "c").rglob("*"))
    while chunk.is_dir():
        chunk = next(chunk.iterdir())
    chunk.write_bytes(chunk.read_bytes()[:-7] + b"garbage")
    with pytest.raises(FormatError) as err:
        lstm_data.open(f"{base}/damaged.zarr").ragged("png")
    assert SECRET not in str(err.value) and SECRET not in str(err.value.file)
    assert "***@127.0.0.1" in err.value.file
    old = without_manifest(shutil.copytree(root / "d.zarr", root / "old.zarr"))
    notes = lstm_data.open(f"{base}/old.zarr").notes
    assert notes and all(SECRET not in n for n in notes)
    shutil.rmtree(old)


def test_cli_shows_no_credentials(served):
    base, _ = served
    for args in (["inspect", f"{base}/d.zarr", "--no-stats"], ["-v", "inspect", f"{base}/d.zarr", "--json",
                                                                 "--no-stats"],
                 ["inspect", f"{base}/missing.zarr"]):
        done = subprocess.run([sys.executable, "-m", "lstm_data", *args], capture_output=True, text=True,
                              timeout=120)
        assert SECRET not in done.stdout + done.stderr, args
        assert "***@127.0.0.1" in done.stdout + done.stderr, args
