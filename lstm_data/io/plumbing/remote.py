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
import socket
import sys
import urllib.parse
from typing import Any

from lstm_data._util.optional import require
from lstm_data.errors import FormatError, redact

__all__ = ["is_url", "remote_format", "remote_filesystem", "url_credentials", "open_remote_file", "NoByteRangesError",
           "serves_byte_ranges", "no_byte_ranges",
           "remote_read_error"]

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
#: protocol -> the package that provides its fsspec filesystem
_PACKAGES = {"http": "aiohttp", "https": "aiohttp", "s3": "s3fs", "gs": "gcsfs", "gcs": "gcsfs",
             "az": "adlfs", "abfs": "adlfs"}
#: protocols read by uproot's own XRootD handler (no fsspec filesystem needed)
_XROOTD = ("root", "xroot")
#: first bytes -> format, for files at URLs
_MAGIC = {b"PAR1": "parquet", b"root": "root"}


class NoByteRangesError(OSError):
    """The server of a URL answers a request for some bytes of a file with the whole file.

    ROOT and Parquet files are read at URLs by byte ranges (HTTP ``Range`` requests);
    the message names the URL and the ways out: download the file, or serve it from
    a server that answers ``Range`` requests (206 Partial Content).
    """


def no_byte_ranges(url: str) -> NoByteRangesError:
    """The error for a server that does not serve byte ranges of ``url`` (shown without credentials)."""
    return NoByteRangesError(f"the server of {redact(url)} does not serve byte ranges (it ignores HTTP Range "
                             "requests and sends the whole file), which reading ROOT and Parquet files at URLs "
                             "needs: download the file and read it locally, or serve it with Range support")


def serves_byte_ranges(url: str) -> bool:
    """Whether the server of ``url`` answers a request for bytes after the first with those bytes.

    Asked when a read of a file at ``url`` failed, to tell the cause; ``True`` when it
    cannot tell (the file cannot be opened, or its size is not known).
    """
    try:
        fs, path = remote_filesystem(url)
        with fs.open(path, "rb", cache_type="none") as fh:
            size = getattr(fh, "size", None)
            if not size or size < 3:
                return True
            fh.seek(1)
            try:
                got = fh.read(1)
            except ValueError:  # fsspec's HTTP file: the answer to a range after the start is not a range
                return False
            return len(got) == 1
    except Exception:  # noqa: BLE001 - cannot tell; the read's own error stands
        return True


def _connection_failure(exc: BaseException) -> BaseException | None:
    """The refused connection or unknown host name under ``exc`` (aiohttp keeps it as ``os_error``)."""
    seen: set[int] = set()
    stack: list[Any] = [exc]
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, (ConnectionError, socket.gaierror)):
            return e
        stack += [getattr(e, "os_error", None), e.__cause__, e.__context__]
    return None


def _unreachable(exc: BaseException, url: str) -> OSError | None:
    """A ``ConnectionError`` naming ``url`` and the cause when ``exc`` is a refused connection or an
    unknown host; else ``None``."""
    cause = _connection_failure(exc)
    if cause is None:
        return None
    host = url.split("://", 1)[-1].split("/", 1)[0].rpartition("@")[2]
    cls: type[OSError] = ConnectionError
    if isinstance(cause, ConnectionRefusedError):
        why, cls = f"connection refused (nothing listens at {host})", ConnectionRefusedError
    elif isinstance(cause, socket.gaierror):
        why = f"host name not found ({cause.strerror or cause})"
    else:
        why = f"{type(cause).__name__}: {cause}"
    return cls(f"cannot connect to {redact(url)}: {redact(why)}")


def _http_status(exc: BaseException, url: str) -> OSError | None:
    """An error naming ``url`` and the HTTP status of an answer that is neither data nor 404."""
    aiohttp = sys.modules.get("aiohttp")
    if aiohttp is None or not isinstance(exc, aiohttp.ClientResponseError):
        return None
    text = f"cannot read {redact(url)}: HTTP {exc.status} {exc.message}".rstrip()
    return PermissionError(text) if exc.status in (401, 403) else OSError(text)


def _nothing_at(url: str) -> FileNotFoundError:
    """"Nothing at ``url``", with the HTTP status for http(s) and zarr.json for a URL that names a store."""
    why = []
    if url.split("://", 1)[0].lower() in ("http", "https"):
        why.append("HTTP 404 Not Found")  # fsspec's HTTP filesystem raises FileNotFoundError for 404 only
    name = url.split("?", 1)[0].split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    if url.split("?", 1)[0].endswith("/") or name.lower().endswith(".zarr") or "." not in name:
        why.append("no zarr.json there")
    return FileNotFoundError(f"nothing at {redact(url)}" + (f" ({'; '.join(why)})" if why else ""))


def _has(fs: Any, path: str, url: str) -> bool:
    """Whether ``path`` holds a file; a refused connection or unknown host is raised (``exists``
    of fsspec's HTTP filesystem answers ``False`` for it)."""
    try:
        fs.cat_file(path, start=0, end=1)
        return True
    except (FileNotFoundError, IsADirectoryError):
        return False
    except Exception as exc:  # noqa: BLE001 - the server's answer, shown without credentials
        err = _unreachable(exc, url)
        if err is not None:
            raise err from None
        if _http_status(exc, url) is not None:  # an HTTP error status: not there (as exists() says)
            return False
        raise OSError(f"cannot reach {redact(url)}: {type(exc).__name__}: {redact(exc)}") from None


def _not_found(exc: FileNotFoundError, url: str) -> OSError:
    """The cause of ``exc``: fsspec's HTTP ``info()`` raises ``FileNotFoundError`` for any failure."""
    cause = exc.__cause__
    status = _http_status(cause, url) if cause is not None and getattr(cause, "status", 404) != 404 else None
    return _unreachable(exc, url) or status or _nothing_at(url)


def remote_read_error(exc: BaseException, url: str) -> OSError | None:
    """The cause of a failed open of the file at ``url``, when it is one of these: nothing
    there (``FileNotFoundError``, with the HTTP status), a refused connection or unknown host
    (``ConnectionError``), an HTTP error status, a server that does not serve byte ranges
    (:class:`NoByteRangesError`, asked of the server); else ``None`` (the reader's own error stands).
    """
    if isinstance(exc, FileNotFoundError):
        return _not_found(exc, url)
    err = _unreachable(exc, url) or _http_status(exc, url)
    if err is None and not serves_byte_ranges(url):
        err = no_byte_ranges(url)
    return err


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


def remote_filesystem(url: str) -> tuple[Any, str]:
    """``(fsspec filesystem, path)`` of ``url``, its credentials given as the filesystem's auth
    (:func:`url_credentials`), never in a path.

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
        return url_to_fs(clean, **options)  # type: ignore[no-any-return]
    except ImportError as exc:
        raise ImportError(f"reading {shown} needs {package} ({redact(exc)}): pip install "
                          f"{package.split()[0]}") from None


def open_remote_file(url: str) -> Any:
    """A binary file object of ``url`` whose reads are the requests (no read-ahead, no cache).

    Raises
    ------
    ImportError
        As :func:`remote_filesystem`.
    FileNotFoundError
        Nothing at ``url`` (for http(s): HTTP 404), URL shown without credentials.
    ConnectionError
        The server cannot be reached: connection refused, or host name not found (the cause said).
    OSError
        Another failure (an HTTP error status, ...), named.
    """
    fs, path = remote_filesystem(url)
    try:
        return fs.open(path, "rb", cache_type="none")
    except FileNotFoundError as exc:
        raise _not_found(exc, url) from None
    except Exception as exc:  # noqa: BLE001 - the server's answer, shown without credentials
        err = _unreachable(exc, url)
        if err is not None:
            raise err from None
        raise OSError(f"cannot read {redact(url)}: {type(exc).__name__}: {redact(exc)}") from None


def remote_format(url: str) -> str:
    """``"zarr"`` when ``url`` holds a zarr v3 root (``zarr.json``); ``"root"`` or ``"parquet"``
    for such a file (its first bytes tell; a ``root://`` URL is ROOT).

    Raises
    ------
    FileNotFoundError
        Nothing at ``url`` (for http(s): HTTP 404; zarr.json is named for a URL that looks like a store).
    ConnectionError
        The server cannot be reached: connection refused, or host name not found (the cause said).
    NoByteRangesError
        A ROOT or Parquet file whose server ignores byte-range requests.
    FormatError
        Something else is there (a zarr v2 store, another file): only our zarr v3
        layout, precomputed batch stores, ROOT and Parquet files are read from URLs.
    """
    protocol = url.split("://", 1)[0].lower()
    if protocol in _XROOTD:
        return "root"
    head, sep, member = url.rpartition(":")
    if sep and member and "/" not in member and head.lower().endswith(".root"):
        url = head  # uproot's spelling of a tree in a file: url.root:Events
    fs, path = remote_filesystem(url)
    root = path.rstrip("/")
    if _has(fs, f"{root}/zarr.json", url):
        return "zarr"
    v2 = _has(fs, f"{root}/.zgroup", url) or _has(fs, f"{root}/.zarray", url)
    if v2:
        raise FormatError("a zarr v2 (L5Kit) store is read from local disk only; copy it, or convert it "
                          "to our zarr v3 layout (lstm-data convert) and serve that", file=url)
    first, other = b"", True
    try:  # the first bytes only (an exists() check may fetch the whole file over HTTP)
        first = bytes(fs.cat_file(root, start=0, end=4))
    except FileNotFoundError:
        other = False
    except Exception as exc:  # noqa: BLE001 - a directory, or an unreachable server, or an HTTP error
        err = _unreachable(exc, url) or _http_status(exc, url)
        if err is not None:
            raise err from None
        try:
            other = fs.exists(root)
        except Exception as exc:  # noqa: BLE001 - the server's answer, shown without credentials
            raise OSError(f"cannot reach {redact(url)}: {type(exc).__name__}: {redact(exc)}") from None
    magic = first[:4]
    if magic in _MAGIC:
        if len(first) > 4:  # four bytes asked, the whole file sent: the server ignored the Range header
            raise no_byte_ranges(url)
        return _MAGIC[magic]
    if other:
        raise FormatError("only zarr v3 stores (lstm-data convert ... OUT.zarr), ROOT and Parquet files are read "
                          f"from URLs; copy this {os.path.splitext(root)[1] or 'file'} locally", file=redact(url))
    raise _nothing_at(url)
