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
:func:`lstm_data.errors.redact`.

Needs ``fsspec`` and the filesystem of the protocol: ``aiohttp`` for http(s)
(``pip install 'lstm_data[remote]'``), ``s3fs`` for s3, ``gcsfs`` for gs; ``root://``
needs the XRootD Python client (``conda install -c conda-forge xrootd``).
"""
from __future__ import annotations

import os
import re
from typing import Any

from lstm_data._util.optional import require
from lstm_data.errors import FormatError, redact

__all__ = ["is_url", "remote_format", "remote_filesystem", "open_remote_file"]

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
#: protocol -> the package that provides its fsspec filesystem
_PACKAGES = {"http": "aiohttp", "https": "aiohttp", "s3": "s3fs", "gs": "gcsfs", "gcs": "gcsfs",
             "az": "adlfs", "abfs": "adlfs"}
#: protocols read by uproot's own XRootD handler (no fsspec filesystem needed)
_XROOTD = ("root", "xroot")
#: first bytes -> format, for files at URLs
_MAGIC = {b"PAR1": "parquet", b"root": "root"}


def is_url(path: Any) -> bool:
    """Whether ``path`` is a URL (``scheme://...``) rather than a local path."""
    return isinstance(path, str) and bool(_URL.match(path)) and not path.startswith("file://")


def remote_filesystem(url: str) -> tuple[Any, str]:
    """``(fsspec filesystem, path)`` of ``url``.

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
        return url_to_fs(url)  # type: ignore[no-any-return]
    except ImportError as exc:
        raise ImportError(f"reading {shown} needs {package} ({redact(exc)}): pip install "
                          f"{package.split()[0]}") from None


def open_remote_file(url: str) -> Any:
    """A binary file object of ``url`` whose reads are the requests (no read-ahead, no cache).

    Raises
    ------
    ImportError
        As :func:`remote_filesystem`.
    OSError
        The server cannot be reached or holds nothing there (URL shown without credentials).
    """
    fs, path = remote_filesystem(url)
    try:
        return fs.open(path, "rb", cache_type="none")
    except FileNotFoundError:
        raise FileNotFoundError(f"nothing at {redact(url)}") from None
    except Exception as exc:  # noqa: BLE001 - the server's answer, shown without credentials
        raise OSError(f"cannot read {redact(url)}: {type(exc).__name__}: {redact(exc)}") from None


def remote_format(url: str) -> str:
    """``"zarr"`` when ``url`` holds a zarr v3 root (``zarr.json``); ``"root"`` or ``"parquet"``
    for such a file (its first bytes tell; a ``root://`` URL is ROOT).

    Raises
    ------
    FileNotFoundError
        Nothing at ``url``.
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
    try:
        if fs.exists(f"{root}/zarr.json"):
            return "zarr"
        v2 = fs.exists(f"{root}/.zgroup") or fs.exists(f"{root}/.zarray")
    except Exception as exc:  # noqa: BLE001 - the server's answer, shown without credentials
        raise OSError(f"cannot reach {redact(url)}: {type(exc).__name__}: {redact(exc)}") from None
    if v2:
        raise FormatError("a zarr v2 (L5Kit) store is read from local disk only; copy it, or convert it "
                          "to our zarr v3 layout (lstm-data convert) and serve that", file=url)
    magic, other = b"", True
    try:  # the first bytes only (an exists() check may fetch the whole file over HTTP)
        magic = bytes(fs.cat_file(root, start=0, end=4))[:4]
    except FileNotFoundError:
        other = False
    except Exception:  # noqa: BLE001 - a directory, or a server that gives no byte ranges
        try:
            other = fs.exists(root)
        except Exception as exc:  # noqa: BLE001 - the server's answer, shown without credentials
            raise OSError(f"cannot reach {redact(url)}: {type(exc).__name__}: {redact(exc)}") from None
    if magic in _MAGIC:
        return _MAGIC[magic]
    if other:
        raise FormatError("only zarr v3 stores (lstm-data convert ... OUT.zarr), ROOT and Parquet files are read "
                          f"from URLs; copy this {os.path.splitext(root)[1] or 'file'} locally", file=redact(url))
    raise FileNotFoundError(f"nothing at {redact(url)} (no zarr.json there)")
