"""Credentials in URLs are used to read, never shown: errors, logs, repr/str, notes, the CLI.

A real HTTP server on 127.0.0.1 serves a store; the URL carries ``user:secret@``
(aiohttp sends it as basic auth, the server ignores it).
"""
from __future__ import annotations

import base64
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


# -- credentials never reach another library ---------------------------------------------------------------------------
TOKEN = "t0kenOf42chars"


class _Guarded(http.server.SimpleHTTPRequestHandler):
    """Serves only to basic auth alice:SECRET or ?token=TOKEN (401 otherwise)."""

    def log_message(self, *args) -> None:  # quiet
        pass

    def _allowed(self) -> bool:
        basic = "Basic " + base64.b64encode(f"alice:{SECRET}".encode()).decode()
        path, _, query = self.path.partition("?")
        if self.headers.get("Authorization") == basic or f"token={TOKEN}" in query.split("&"):
            self.path = path
            return True
        self.send_error(401)
        return False

    def do_GET(self) -> None:
        if self._allowed():
            super().do_GET()

    def do_HEAD(self) -> None:
        if self._allowed():
            super().do_HEAD()


@pytest.fixture(scope="module")
def guarded(served):
    _, root = served
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Guarded, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()


class _Everything(logging.Handler):
    """Every record of every logger, formatted with its exception and arguments."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[str] = []
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(f"{self.format(record)} {record.args!r} {record.msg!r}")


@pytest.fixture
def every_logger_at_debug():
    handler = _Everything()
    loggers = [logging.getLogger()] + [logging.getLogger(n) for n in list(logging.root.manager.loggerDict)]
    saved = [(lg, lg.level, lg.propagate) for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.DEBUG)
    logging.getLogger().addHandler(handler)
    for lg in loggers[1:]:
        if not lg.propagate:
            lg.addHandler(handler)
    yield handler
    for lg, level, _ in saved:
        lg.setLevel(level)
        if handler in lg.handlers:
            lg.removeHandler(handler)


def test_credentials_reach_no_log_record_of_any_library(guarded, every_logger_at_debug, capsys):
    from lstm_data.cli import main

    seen: list[str] = []
    for url in (f"http://alice:{SECRET}@{guarded}", f"http://{guarded}/d.zarr?token={TOKEN}"):
        store = url + "/d.zarr" if "@" in url else url
        ds = lstm_data.open(store)  # the server refuses requests without the credentials
        values, _ = ds.ragged("png", [0, 5, 900])
        assert len(ds) == 1500 and len(values) > 0
        seen += [repr(ds), str(ds), str(ds.source), " ".join(ds.notes)]
        batches_url = url + "/b.zarr" if "@" in url else url.replace("/d.zarr", "/b.zarr")
        batches = lstm_data.open_batches(batches_url)
        assert batches[0][0]["input_png3d"].shape[1:] == (10, 33)
        seen += [repr(batches)]
        for missing in (url + "/missing.zarr" if "@" in url else url.replace("/d.zarr", "/missing.zarr"),):
            with pytest.raises(FileNotFoundError) as err:
                lstm_data.open(missing)
            seen += [str(err.value), repr(err.value)]
        assert main(["-vv", "inspect", store, "--no-stats"]) == 0
        assert main(["inspect", batches_url]) == 0
    out = capsys.readouterr()
    seen += [out.out, out.err]
    records = every_logger_at_debug.texts
    assert any(guarded in r for r in records)  # the URLs fetched were logged (so a secret in them would show)
    assert any("***" in s for s in seen)  # and we showed them redacted
    for secret in (SECRET, TOKEN):
        assert not [r for r in records if secret in r], secret
        assert not [s for s in seen if secret in s], secret
    # without the credentials, the server refuses
    with pytest.raises(PermissionError, match="HTTP 401"):
        lstm_data.open(f"http://{guarded}/d.zarr")
