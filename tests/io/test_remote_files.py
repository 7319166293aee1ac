"""ROOT and Parquet files over HTTP (a real server on 127.0.0.1 that serves byte ranges): equal to the
local read, and only the byte ranges of the needed columns are fetched."""
from __future__ import annotations

import functools
import http.server
import os
import socket
import threading

import numpy as np
import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("fsspec")

import lstm_data  # noqa: E402
from tests.helpers import assert_same_dataset, root_events  # noqa: E402
from tests.http_server import RangeHandler, serve  # noqa: E402


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    uproot = pytest.importorskip("uproot")
    ak = pytest.importorskip("awkward")
    root = tmp_path_factory.mktemp("www")
    rng = np.random.default_rng(4)
    cols = root_events(20_000, seed=4)
    for i in range(12):  # wide rows: the two columns asked for are a small part of the file
        cols[f"extra{i}"] = rng.normal(size=20_000)
    with uproot.recreate(root / "events.root") as fh:
        types = {k: v.type.content if isinstance(v, ak.Array) else v.dtype for k, v in cols.items()}
        tree = fh.mktree("Events", types)
        for a in range(0, 20_000, 5_000):
            tree.extend({k: v[a:a + 5_000] for k, v in cols.items()})
    ds = lstm_data.data.synthetic.make_dataset(5_000, seed=8)
    ds.to_parquet(root / "events.parquet", row_group_size=1_000)
    with serve(root, RangeHandler) as (url, handler):
        yield url, root, handler.sent


@pytest.mark.parametrize("in_ram", [True, False])
def test_root_over_http_reads_only_the_needed_baskets(served, in_ram):
    url, root, sent = served
    columns = ["MET_pt", "Muon_*"]
    local = lstm_data.open(str(root / "events.root"), columns=columns)
    sent.clear()
    remote = lstm_data.open(f"{url}/events.root", columns=columns, in_ram=in_ram)
    assert_same_dataset(remote.load(), local)
    size = os.path.getsize(root / "events.root")
    assert 0 < sum(sent) < 0.4 * size, (sum(sent), size)
    sent.clear()
    whole = lstm_data.open(f"{url}/events.root:Events", in_ram=True)  # uproot's url:tree spelling
    assert_same_dataset(whole, lstm_data.open(str(root / "events.root")))
    assert sum(sent) > 0.8 * size


@pytest.mark.parametrize("in_ram", [True, False])
def test_parquet_over_http_reads_only_the_needed_columns(served, in_ram):
    url, root, sent = served
    columns = ["calE", "png.calE", "png.nhit"]
    local = lstm_data.open(str(root / "events.parquet"), columns=columns)
    sent.clear()
    remote = lstm_data.open(f"{url}/events.parquet", columns=columns, in_ram=in_ram)
    assert remote.in_ram is in_ram
    assert_same_dataset(remote.load(), local)
    size = os.path.getsize(root / "events.parquet")
    assert 0 < sum(sent) < 0.4 * size, (sum(sent), size)


def test_needed_columns_of_a_spec_are_pushed_down_over_http(served):
    url, root, sent = served
    sent.clear()
    remote = lstm_data.open(f"{url}/events.parquet", needed=("trueE",))
    assert remote.scalar_names == ["trueE"] and not remote.groups
    assert sum(sent) < 0.1 * os.path.getsize(root / "events.parquet")


def test_root_url_without_the_xrootd_client_says_so():
    pytest.importorskip("uproot")
    try:
        import XRootD  # noqa: F401
        pytest.skip("the XRootD client is installed")
    except ImportError:
        pass
    with pytest.raises(ImportError, match="XRootD Python client"):
        lstm_data.open("root://eospublic.cern.ch//eos/opendata/x.root")


def test_a_url_of_something_else_is_a_format_error(served):
    url, root, _ = served
    (root / "notes.txt").write_text("hello")
    with pytest.raises(lstm_data.FormatError, match="ROOT and Parquet"):
        lstm_data.open(f"{url}/notes.txt")


def test_any_fsspec_url_reads_root_and_parquet(served):
    """fsspec's in-memory filesystem stands for any other protocol (s3://, gs://): same values."""
    fsspec = pytest.importorskip("fsspec")
    _, root, _ = served
    fs = fsspec.filesystem("memory")
    for name in ("events.root", "events.parquet"):
        fs.pipe(f"/lstm_data_test/{name}", (root / name).read_bytes())
    try:
        for name, columns in (("events.root", ["MET_pt", "Muon_*"]), ("events.parquet", ["calE", "png.*"])):
            local = lstm_data.open(str(root / name), columns=columns)
            for in_ram in (True, False):
                assert_same_dataset(lstm_data.open(f"memory://lstm_data_test/{name}", columns=columns,
                                                   in_ram=in_ram).load(),
                      local)
    finally:
        fs.rm("/lstm_data_test", recursive=True)


class _NoRanges(http.server.SimpleHTTPRequestHandler):
    """A server that ignores ``Range`` headers: every GET is 200 with the whole file; 403 for ``/forbidden*``."""

    def log_message(self, *args) -> None:  # quiet
        pass

    def send_head(self):
        if self.path.startswith("/forbidden"):
            self.send_error(403)
            return None
        return super().send_head()


class _QuietServer(http.server.ThreadingHTTPServer):
    """Clients that stop reading the whole file they did not ask for are no error of the test."""

    def handle_error(self, request, client_address) -> None:
        pass


@pytest.fixture(scope="module")
def served_without_ranges(served):
    _, root, _ = served
    server = _QuietServer(("127.0.0.1", 0), functools.partial(_NoRanges, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _read_parquet(url):
    from lstm_data.io.parquet import read_parquet
    return read_parquet(url)


def _read_root(url):
    from lstm_data.io.root import read_root
    return read_root(url)


READS = {"open": lstm_data.open, "read_parquet": _read_parquet, "read_root": _read_root}
CASES = [("open", ".parquet"), ("open", ".root"), ("read_parquet", ".parquet"), ("read_root", ".root")]


@pytest.mark.parametrize("how,suffix", CASES)
def test_a_404_names_the_url_and_the_status_not_zarr_json(served, how, suffix):
    url, _, _ = served
    with pytest.raises(FileNotFoundError) as info:
        READS[how](f"{url}/nope{suffix}")
    assert f"{url}/nope{suffix}" in str(info.value) and "HTTP 404" in str(info.value)
    assert "zarr.json" not in str(info.value)


def test_a_404_at_a_url_that_names_a_zarr_store_mentions_zarr_json(served):
    url, _, _ = served
    with pytest.raises(FileNotFoundError, match=r"nope\.zarr \(HTTP 404 Not Found; no zarr.json there\)"):
        lstm_data.open(f"{url}/nope.zarr")


@pytest.mark.parametrize("how,suffix", CASES + [("open", ".zarr")])
def test_a_refused_connection_is_a_connection_error_naming_the_url_and_the_cause(how, suffix):
    url = f"http://127.0.0.1:{_closed_port()}/x{suffix}"
    with pytest.raises(ConnectionRefusedError) as info:
        READS[how](url)
    assert url in str(info.value) and "connection refused" in str(info.value)


def test_an_unknown_host_is_a_connection_error_naming_the_url_and_the_cause():
    url = "http://no-such-host.invalid/x.parquet"  # .invalid never resolves (RFC 2606)
    with pytest.raises(ConnectionError) as info:
        lstm_data.open(url)
    assert url in str(info.value) and "host name not found" in str(info.value)


@pytest.mark.parametrize("how,suffix", CASES)
def test_a_server_without_byte_ranges_is_named_as_the_cause(served_without_ranges, how, suffix):
    url = f"{served_without_ranges}/events{suffix}"
    with pytest.raises(OSError) as info:  # neither fsspec's ValueError nor "damaged or truncated?"
        READS[how](url)
    text = str(info.value)
    assert url in text and "does not serve byte ranges" in text
    assert "download the file" in text and "Range support" in text
    from lstm_data.io.plumbing.remote import NoByteRangesError
    assert isinstance(info.value, NoByteRangesError)


def test_the_same_files_read_where_byte_ranges_are_served(served, served_without_ranges):
    """The check above is of the server: the same files at a server with ranges read."""
    url, _, _ = served
    assert len(lstm_data.open(f"{url}/events.parquet", columns=["calE"])) == 5_000
    assert len(lstm_data.open(f"{url}/events.root", columns=["MET_pt"])) == 20_000


@pytest.mark.parametrize("how,suffix", CASES)
def test_a_403_is_a_permission_error_with_its_status_not_a_404(served_without_ranges, how, suffix):
    url = f"{served_without_ranges}/forbidden{suffix}"
    with pytest.raises(PermissionError) as info:
        READS[how](url)
    said = str(info.value).replace(url, "<url>")  # the server's port may hold "404" too
    assert url in str(info.value) and "HTTP 403" in said and "404" not in said
