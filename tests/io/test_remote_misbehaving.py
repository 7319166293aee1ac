"""Servers that misbehave (a real server on 127.0.0.1, see tests/http_server.py): each case is a clear
lstm_data error naming the URL, or the right values; small timeouts keep every case short."""
from __future__ import annotations

import socket

import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("fsspec")

import lstm_data  # noqa: E402
from lstm_data import ReadOptions  # noqa: E402
from lstm_data.errors import FormatError, OptionError, RemoteError  # noqa: E402
from lstm_data.io.plumbing.remote_errors import NoByteRangesError, RemoteTimeoutError  # noqa: E402
from tests.helpers import root_events  # noqa: E402
from tests.http_server import MisbehavingHandler, serve  # noqa: E402

#: small timeouts: a stalled server is given up on in half a second
QUICK = ReadOptions(connect_timeout=2, read_timeout=0.5, retries=2)
FILES = {"zarr": "d.zarr", "root": "events.root", "parquet": "events.parquet"}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    uproot = pytest.importorskip("uproot")
    pytest.importorskip("pyarrow")
    root = tmp_path_factory.mktemp("www")
    data = lstm_data.data.synthetic.make_dataset(600, seed=3)
    data.to_zarr(root / "d.zarr", chunk_bytes=16 * 1024)
    data.to_parquet(root / "events.parquet", row_group_size=200)
    data.to_parquet(root / "events0.parquet", row_group_size=200)
    cols = root_events(2_000, seed=5)
    with uproot.recreate(root / "events.root") as fh:
        fh["Events"] = {k: v for k, v in cols.items()}
    with serve(root, MisbehavingHandler) as (url, handler):
        yield url, root, handler


def _open(url: str, fmt: str, read: ReadOptions = QUICK) -> lstm_data.Dataset:
    ds = lstm_data.open(url, read=read, **({"in_ram": True} if fmt != "zarr" else {}))
    return ds.load() if fmt == "zarr" else ds


def _same(got: lstm_data.Dataset, want: lstm_data.Dataset) -> None:
    assert got.scalar_names == want.scalar_names and list(got.groups) == list(want.groups)
    for s in want.scalar_names:
        assert got.scalar(s).tobytes() == want.scalar(s).tobytes(), s
    for g in want.groups:
        for a, b in zip(got.ragged(g), want.ragged(g)):
            assert a.tobytes() == b.tobytes(), g


@pytest.mark.parametrize("fmt", list(FILES))
@pytest.mark.parametrize("mode", ["redirect", "fail-once"])
def test_a_redirect_or_one_http_500_reads_the_right_values(served, fmt, mode):
    url, root, _ = served
    _same(_open(f"{url}/{mode}/{FILES[fmt]}", fmt), _open(str(root / FILES[fmt]), fmt, ReadOptions()))


def test_the_zarr_store_reads_from_a_server_that_ignores_range(served):
    """Chunks are fetched whole: a server without byte ranges serves a store."""
    url, root, _ = served
    _same(_open(f"{url}/no-ranges/d.zarr", "zarr"), _open(str(root / "d.zarr"), "zarr"))


@pytest.mark.parametrize("fmt", list(FILES))
def test_a_server_that_stalls_after_its_headers_is_a_timeout_naming_the_url(served, fmt):
    url, _, _ = served
    where = f"{url}/stall/{FILES[fmt]}"
    with pytest.raises(RemoteTimeoutError) as info:
        _open(where, fmt)
    text = str(info.value)
    assert where in text and "read_timeout = 0.5 s" in text
    assert isinstance(info.value, TimeoutError) and isinstance(info.value, RemoteError)
    assert "zarr v3" not in text and "TTree" not in text


@pytest.mark.parametrize("fmt", ["root", "parquet"])
@pytest.mark.parametrize("mode", ["shift", "short"])
def test_a_wrong_or_short_range_is_a_format_error_naming_the_url_the_range_and_the_answer(served, fmt, mode):
    url, _, _ = served
    where = f"{url}/{mode}/{FILES[fmt]}"
    with pytest.raises(FormatError) as info:
        _open(where, fmt)
    text = str(info.value)
    assert where in text and "answered a request for bytes 0-3" in text, text
    assert "HTTP 206" in text and "Content-Range" in text
    assert "TTree" not in text and "zarr v3" not in text and "damaged" not in text


@pytest.mark.parametrize("fmt", list(FILES))
def test_a_connection_closed_mid_body_is_one_remote_error_naming_the_url(served, fmt):
    url, _, _ = served
    where = f"{url}/cut/{FILES[fmt]}"
    with pytest.raises(RemoteError) as info:
        _open(where, fmt)
    text = str(info.value)
    assert isinstance(info.value, ConnectionError)
    assert where in text and "closed before the end of the answer (3 tries)" in text, text


@pytest.mark.parametrize("fmt", ["root", "parquet"])
def test_a_server_that_ignores_range_is_named_for_root_and_parquet(served, fmt):
    url, _, _ = served
    where = f"{url}/no-ranges/{FILES[fmt]}"
    with pytest.raises(NoByteRangesError, match="does not serve byte ranges") as info:
        _open(where, fmt)
    assert where in str(info.value)


@pytest.mark.parametrize("fmt", ["root", "parquet"])
def test_reads_on_demand_go_through_the_same_checks(served, fmt):
    """Read on demand, the reads after the open go through the checked filesystem too."""
    url, root, _ = served
    ds = lstm_data.open(f"{url}/redirect/{FILES[fmt]}", read=QUICK, in_ram=False)
    _same(ds.load(), lstm_data.open(str(root / FILES[fmt])))


def test_retries_zero_fails_on_the_first_http_500(served):
    url, _, _ = served
    with pytest.raises(RemoteError, match=r"HTTP 500") as info:
        _open(f"{url}/fail-once/events0.parquet", "parquet", QUICK.replace(retries=0))
    assert f"{url}/fail-once/events0.parquet" in str(info.value) and info.value.status == 500


def test_a_connection_that_is_never_accepted_is_a_connect_timeout():
    """A listening socket whose backlog is full drops new connections: the connect times out."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(0)
        filler = [socket.create_connection(s.getsockname(), timeout=1)]  # the queue's one place
        port = s.getsockname()[1]
        try:
            with pytest.raises(RemoteError) as info:
                lstm_data.open(f"http://127.0.0.1:{port}/x.parquet",
                               read=ReadOptions(connect_timeout=0.3, read_timeout=0.3, retries=0))
        finally:
            for c in filler:
                c.close()
    assert f"127.0.0.1:{port}/x.parquet" in str(info.value)
    assert isinstance(info.value, TimeoutError) and "timeout = 0.3 s" in str(info.value)


def test_remote_options_are_checked_and_round_trip_through_toml(tmp_path):
    read = ReadOptions(connect_timeout=1.5, read_timeout=4, retries=0, max_line_bytes=1 << 20)
    path = tmp_path / "read.toml"
    path.write_text(read.to_toml())
    assert ReadOptions.from_toml(path) == read
    assert read.remote_settings().read_timeout == 4.0 and read.remote_settings().retries == 0
    for bad in ({"connect_timeout": 0}, {"read_timeout": -1}, {"read_timeout": True}, {"retries": -1},
                {"retries": 1.5}, {"read_timeout": float("inf")}):
        with pytest.raises(OptionError, match=next(iter(bad))):
            ReadOptions(**bad)


def test_remote_options_do_not_apply_to_a_local_csv(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(OptionError, match=r"read_timeout.*only to parquet, root, zarr"):
        lstm_data.open(str(path), read_timeout=3)
