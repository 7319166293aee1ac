"""zarr stores at fsspec URLs (``http://``, ``https://``, ``s3://``, ``gs://``, ...).

``lstm_data.open(url)`` and ``open_batches(url)`` read our zarr v3 layout through
zarr-python's fsspec store: the same checks as for a local store (layout,
every-chunk record, CRC-32C per chunk), and the same chunk-aware reads: a request
fetches each chunk it touches once, so ``shuffle="block"`` fetches each chunk at
most twice per epoch. Other formats are files read whole by their libraries:
copy them locally, or convert them to zarr and serve that.

Credentials in a URL (``https://user:password@host/...``, ``?token=...``) are used
to read, and never shown: errors, logs and ``repr`` show the URL through
:func:`lstm_data.errors.redact`.

Needs ``fsspec`` and the filesystem of the protocol: ``aiohttp`` for http(s)
(``pip install 'lstm_data[remote]'``), ``s3fs`` for s3, ``gcsfs`` for gs.
"""
from __future__ import annotations

import os
import re
from typing import Any

from lstm_data._util.optional import require
from lstm_data.errors import FormatError, redact

__all__ = ["is_url", "remote_format", "remote_filesystem"]

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
#: protocol -> the package that provides its fsspec filesystem
_PACKAGES = {"http": "aiohttp", "https": "aiohttp", "s3": "s3fs", "gs": "gcsfs", "gcs": "gcsfs",
             "az": "adlfs", "abfs": "adlfs"}


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


def remote_format(url: str) -> str:
    """``"zarr"`` when ``url`` holds a zarr v3 root (``zarr.json``).

    Raises
    ------
    FileNotFoundError
        Nothing at ``url``.
    FormatError
        Something else is there (a zarr v2 store, a file): only our zarr v3 layout
        and precomputed batch stores are read from URLs.
    """
    fs, path = remote_filesystem(url)
    root = path.rstrip("/")
    try:
        if fs.exists(f"{root}/zarr.json"):
            return "zarr"
        v2 = fs.exists(f"{root}/.zgroup") or fs.exists(f"{root}/.zarray")
        other = fs.exists(root)
    except Exception as exc:  # noqa: BLE001 - the server's answer, shown without credentials
        raise OSError(f"cannot reach {redact(url)}: {type(exc).__name__}: {redact(exc)}") from None
    if v2:
        raise FormatError("a zarr v2 (L5Kit) store is read from local disk only; copy it, or convert it "
                          "to our zarr v3 layout (lstm-data convert) and serve that", file=url)
    if other:
        raise FormatError("only zarr v3 stores (lstm-data convert ... OUT.zarr) are read from URLs; "
                          f"copy this {os.path.splitext(root)[1] or 'file'} locally", file=url)
    raise FileNotFoundError(f"nothing at {redact(url)} (no zarr.json there)")
