"""zarr stores, ROOT and Parquet files at URLs (``http://``, ``https://``, ``s3://``, ``gs://``, ``root://``, ...).

``lstm_data.open(url)`` and ``open_batches(url)`` read our zarr v3 layout through
zarr-python's fsspec store: the same checks as for a local store (layout,
every-chunk record, CRC-32C per chunk), and the same chunk-aware reads: a request
fetches each chunk it touches once, so ``shuffle="block"`` fetches each chunk at
most twice per epoch.

ROOT and Parquet files (told apart by their first bytes) are read where they are,
fetching only the byte ranges of the columns read (``columns=``, or a spec's
``needed`` columns): ROOT through uproot's handler of the protocol (HTTP(S) range
requests, ``root://`` through the XRootD client, other protocols through fsspec),
Parquet through an fsspec file without read-ahead, so pyarrow's reads of the footer
and of the needed column chunks are the requests. ``in_ram=False`` reads them on
demand, by cluster or row group. Other files (CSV, HDF5, zarr v2): copy them
locally, or convert them to zarr and serve that.

Reads at http(s) URLs go through :class:`~lstm_data.io.plumbing.http_checked.CheckedHTTPFileSystem`:
timeouts for a connection and for a stalled answer, retries of HTTP 5xx answers and
connections closed early, and a check of every byte-range answer (see
:class:`~lstm_data.io.plumbing.remote_errors.RemoteSettings` for the
``ReadOptions`` that set them). Every failure is one
:class:`~lstm_data.errors.RemoteError` naming the URL, and a wrong answer a
``FormatError`` naming the URL, the range asked and what came back.

Credentials in a URL (``https://user:password@host/...``, ``?token=...``) are used
to read, and never shown: errors, logs and ``repr`` show the URL through
:func:`lstm_data.errors.redact`, and the libraries that read (fsspec, aiohttp, zarr) never
see them in a URL: :func:`url_credentials` hands them over as their auth.

Needs ``fsspec`` and the filesystem of the protocol: ``aiohttp`` for http(s)
(``pip install 'lstm_data[remote]'``), ``s3fs`` for s3, ``gcsfs`` for gs; ``root://``
needs the XRootD Python client (``conda install -c conda-forge xrootd``).
"""
from __future__ import annotations

import base64
import os
import re
import urllib.parse
from typing import Any

from lstm_data._util.optional import require
from lstm_data.errors import FormatError, redact
from lstm_data.io.formats import FORMATS
from lstm_data.io.plumbing.range_file import RangeFile
from lstm_data.io.plumbing.remote_errors import (
    TRANSPORT_ERRORS,
    NoByteRangesError,
    RemoteNotFoundError,
    RemoteSettings,
    no_byte_ranges,
    remote_error,
)

__all__ = ["is_url", "remote_format", "remote_filesystem", "url_credentials", "open_remote_file", "NoByteRangesError",
           "no_byte_ranges", "remote_read_error", "RemoteSettings"]

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
#: protocol -> the package that provides its fsspec filesystem
_PACKAGES = {"http": "aiohttp", "https": "aiohttp", "s3": "s3fs", "gs": "gcsfs", "gcs": "gcsfs",
             "az": "adlfs", "abfs": "adlfs"}
#: protocols read by uproot's own XRootD handler (no fsspec filesystem needed)
_XROOTD = ("root", "xroot")
#: first bytes -> format, for files at URLs (the formats of the table read there)
_MAGIC = {magic: fmt.name for fmt in FORMATS if fmt.remote for magic in fmt.magic}
#: how many first bytes of a file at a URL are asked for
_HEAD = max(len(magic) for magic in _MAGIC)


def _nothing_at(url: str) -> FileNotFoundError:
    """"Nothing at ``url``", with the HTTP status for http(s) and zarr.json for a URL that names a store."""
    why = []
    if _is_http(url):
        why.append("HTTP 404 Not Found")
    name = url.split("?", 1)[0].split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    if url.split("?", 1)[0].endswith("/") or name.lower().endswith(".zarr") or "." not in name:
        why.append("no zarr.json there")
    return RemoteNotFoundError(f"nothing at {redact(url)}" + (f" ({'; '.join(why)})" if why else ""), url=url)


def _is_http(url: str) -> bool:
    return url.split("://", 1)[0].lower() in ("http", "https")


def _has(fs: Any, path: str, url: str) -> bool:
    """Whether ``path`` holds a file (its first byte is read); an HTTP 4xx status says no, as
    ``exists`` would; any other failure is raised, naming ``url``."""
    try:
        fs.cat_file(path, start=0, end=1)
        return True
    except (FileNotFoundError, IsADirectoryError):
        return False
    except NoByteRangesError:  # answered with the whole file: it is there
        return True
    except Exception as exc:  # noqa: BLE001 - the server's answer, shown without credentials
        err = remote_error(exc, url)
        status = getattr(err, "status", None) or getattr(exc, "status", None)
        if isinstance(status, int) and 400 <= status < 500:
            return False
        raise err from None


def remote_read_error(exc: BaseException, url: str) -> BaseException | None:
    """The error to raise for a failed read of the file at ``url`` when it is the transport's:
    the error itself when the transport said what happened (a
    :class:`~lstm_data.errors.RemoteError`); nothing there (``FileNotFoundError``); a refused
    connection, unknown host or other failure of the connection. ``None`` otherwise (the
    reader's own error stands).
    """
    if isinstance(exc, TRANSPORT_ERRORS):
        return exc
    if isinstance(exc, FileNotFoundError):
        return _nothing_at(url)
    err = remote_error(exc, url)
    return err if isinstance(err, ConnectionError) else None


def is_url(path: Any) -> bool:
    """Whether ``path`` is a URL (``scheme://...``) rather than a local path."""
    return isinstance(path, str) and bool(_URL.match(path)) and not path.startswith("file://")


def url_credentials(url: str) -> tuple[str, dict[str, Any]]:
    """``url`` without its credentials, and the fsspec storage options that send them.

    The user information (``user:password@``) and, for http(s), the query (``?token=...``)
    leave the URL before fsspec, aiohttp or zarr see it, as these log the URLs they fetch
    (``fsspec.http`` at DEBUG). For http(s), the user and password go as the basic-auth
    ``Authorization`` header of aiohttp's session (fsspec's ``client_kwargs``) and the query as parameters of every request (so it also
    stays out of the paths of a store's keys); for s3, as s3fs's ``key`` and ``secret``; for
    other protocols, as fsspec's ``username`` and ``password``.

    Parameters
    ----------
    url
        A URL, perhaps with credentials.

    Returns
    -------
    url : str
        The URL without user information (nor, for http(s), query).
    options : dict
        Storage options for :func:`fsspec.core.url_to_fs` (empty when there are no credentials).
    """
    parts = urllib.parse.urlsplit(url)
    protocol, netloc, query = parts.scheme.lower(), parts.netloc, parts.query
    options: dict[str, Any] = {}
    if "@" in netloc:
        userinfo, netloc = netloc.rsplit("@", 1)
        user, _, password = (urllib.parse.unquote(p) for p in userinfo.partition(":"))
        if protocol in ("http", "https"):  # basic auth, as aiohttp's BasicAuth encodes it, on every request
            basic = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
            options["client_kwargs"] = {"headers": {"Authorization": f"Basic {basic}"}}
        elif protocol in ("s3", "s3a"):
            options.update(key=user, secret=password)
        else:
            options.update(username=user, password=password)
    if query and protocol in ("http", "https"):
        options["params"] = query  # as written (a presigned URL's signature covers its encoding)
        query = ""
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment)), options


def remote_filesystem(url: str, settings: RemoteSettings | None = None, *,
                      asynchronous: bool = False) -> tuple[Any, str]:
    """``(fsspec filesystem, path)`` of ``url``, its credentials given as the filesystem's auth
    (:func:`url_credentials`), never in a path: for http(s), a
    :class:`~lstm_data.io.plumbing.http_checked.CheckedHTTPFileSystem` with ``settings``.

    Raises
    ------
    ImportError
        fsspec, or the package of the URL's protocol, is not installed (named).
    """
    protocol = url.split("://", 1)[0].lower()
    package = _PACKAGES.get(protocol, f"the fsspec filesystem for {protocol}://")
    shown = redact(url)
    url_to_fs = require(f"reading {shown}", "remote", "fsspec.core").url_to_fs
    try:
        clean, options = url_credentials(url)
        if _is_http(url):
            from lstm_data.io.plumbing.http_checked import CheckedHTTPFileSystem

            s = settings or RemoteSettings()
            return CheckedHTTPFileSystem(connect_timeout=s.connect_timeout, read_timeout=s.read_timeout,
                                         retries=s.retries, asynchronous=asynchronous, **options), clean
        if asynchronous:
            options["asynchronous"] = True
        return url_to_fs(clean, **options)  # type: ignore[no-any-return]
    except ImportError as exc:
        raise ImportError(f"reading {shown} needs {package} ({redact(exc)}): pip install "
                          f"{package.split()[0]}") from None


def open_remote_file(url: str, settings: RemoteSettings | None = None) -> RangeFile:
    """A binary file object of ``url`` whose reads are the requests (no read-ahead, no cache).

    Raises
    ------
    ImportError
        As :func:`remote_filesystem`.
    FileNotFoundError
        Nothing at ``url`` (for http(s): HTTP 404), URL shown without credentials.
    lstm_data.errors.RemoteError
        Any other failure (no server, an HTTP error status, no answer in time), named.
    """
    fs, path = remote_filesystem(url, settings)
    try:
        size = fs.size(path)
    except FileNotFoundError:
        raise _nothing_at(url) from None
    except Exception as exc:  # noqa: BLE001 - the server's answer, shown without credentials
        raise remote_error(exc, url) from None
    if size is None:
        raise remote_error(OSError("the server does not tell the file's size"), url)
    return RangeFile(fs, path, url, size)


def remote_format(url: str, settings: RemoteSettings | None = None) -> str:
    """The format at ``url``, among the rows of :data:`~lstm_data.io.formats.FORMATS` read at URLs:
    ``"zarr"`` when ``url`` holds a zarr v3 root (``zarr.json``); ``"root"`` or ``"parquet"``
    for such a file (its first bytes tell; a ``root://`` URL is ROOT).

    Raises
    ------
    FileNotFoundError
        Nothing at ``url`` (for http(s): HTTP 404; zarr.json is named for a URL that looks like a store).
    lstm_data.errors.RemoteError
        The server cannot be reached, does not answer in time, answers with an error; a
        ROOT or Parquet file whose server ignores byte-range requests (``NoByteRangesError``).
    FormatError
        Something else is there (a zarr v2 store, another file): only our zarr v3
        layout, precomputed batch stores, ROOT and Parquet files are read from URLs;
        or the server answered with other bytes than those asked.
    """
    protocol = url.split("://", 1)[0].lower()
    if protocol in _XROOTD:
        return "root"
    head, sep, member = url.rpartition(":")
    if sep and member and "/" not in member and head.lower().endswith(".root"):
        url = head  # uproot's spelling of a tree in a file: url.root:Events
    fs, path = remote_filesystem(url, settings)
    root = path.rstrip("/")
    for fmt in FORMATS:  # stores, told by the files that mark them
        if any(_has(fs, f"{root}/{marker}", url) for marker in fmt.markers):
            if not fmt.remote:
                raise FormatError(f"a {fmt.title} store is read from local disk only; copy it, or convert it "
                                  "to our zarr v3 layout (lstm-data convert) and serve that", file=url)
            return fmt.name
    try:  # the first bytes only (an exists() check may fetch the whole file over HTTP)
        first = bytes(fs.cat_file(root, start=0, end=_HEAD))
    except (FileNotFoundError, IsADirectoryError):
        raise _nothing_at(url) from None
    except Exception as exc:  # noqa: BLE001 - an unreachable server, an HTTP error: said as such
        raise remote_error(exc, url) from None
    for magic, name in _MAGIC.items():
        if first.startswith(magic):
            if len(first) > _HEAD:  # the bytes asked, more sent: the server ignored the Range header
                raise no_byte_ranges(url)
            return name
    files = " and ".join(fmt.title for fmt in FORMATS if fmt.remote and fmt.magic)
    raise FormatError(f"only zarr v3 stores (lstm-data convert ... OUT.zarr), {files} files are read "
                      f"from URLs; copy this {os.path.splitext(root)[1] or 'file'} locally", file=redact(url))
