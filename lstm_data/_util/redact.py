"""Credentials never shown: :func:`redact` for every place a location is printed.

A URL may carry secrets: ``https://user:password@host/data.zarr``,
``...?token=...`` or a presigned ``...?X-Amz-Credential=...&X-Amz-Signature=...``.
Errors, log records, ``repr``/``str``, progress bars and the CLI show locations
through :func:`redact`; the real URL is kept only where it is used to read.
"""
from __future__ import annotations

import re
from typing import Any, Mapping

__all__ = ["redact", "redact_options"]

_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>]+")
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*://)[^/?#@]*@")
_SECRET_NAME = r"[^=&;#]*(?:token|key|secret|sig|pass|pwd|auth|credential|session|code)[^=&;#]*"
_SECRET_PARAM = re.compile(rf"([?&;]{_SECRET_NAME}=)[^&;#]*", re.IGNORECASE)
_SECRET_KEY = re.compile(_SECRET_NAME, re.IGNORECASE)
#: what replaces a secret
MASK = "***"


def _redact_url(match: re.Match) -> str:
    url = _USERINFO.sub(rf"\g<1>{MASK}@", match.group(0))
    return _SECRET_PARAM.sub(rf"\g<1>{MASK}", url)


def redact(text: Any) -> str:
    """``str(text)`` with the credentials of every URL in it replaced by ``***``.

    The user information of ``scheme://user:password@host/...`` (user and
    password) and the values of query parameters whose names carry secrets
    (``token``, ``key``, ``signature``, ``X-Amz-Credential``, ``password``, ...).
    """
    text = str(text)
    return _URL_IN_TEXT.sub(_redact_url, text) if "://" in text else text


def redact_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """``options`` (e.g. fsspec ``storage_options``) with secret-named values (``key``,
    ``secret``, ``token``, ``password``, ...) replaced by ``***``, nested mappings too."""
    out: dict[str, Any] = {}
    for k, v in dict(options or {}).items():
        if isinstance(v, Mapping):
            out[k] = redact_options(v)
        elif _SECRET_KEY.fullmatch(str(k)):
            out[k] = MASK
        else:
            out[k] = redact(v) if isinstance(v, str) else v
    return out
