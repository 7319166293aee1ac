"""Credentials never shown: :func:`redact` for every place a location is printed.

A URL may carry secrets: ``https://user:password@host/data.zarr``,
``...?token=...`` or a presigned ``...?X-Amz-Credential=...&X-Amz-Signature=...``.
Errors, log records, ``repr``/``str``, progress bars and the CLI show locations
through :func:`redact`; the real URL is kept only where it is used to read.
"""
from __future__ import annotations

import logging
import re
from typing import Any, Mapping

from lstm_data.errors import SECRET_NAME, redact

__all__ = ["redact", "redact_options", "RedactingFilter", "install_log_redaction"]

_SECRET_KEY = re.compile(SECRET_NAME, re.IGNORECASE)
#: what replaces a secret
MASK = "***"


class RedactingFilter(logging.Filter):
    """A logging filter that redacts credentials in a record's message (see :func:`redact`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if "://" in text:
            record.msg, record.args = redact(text), ()
        return True


def install_log_redaction(names: tuple[str, ...] = ("lstm_data", "lstm_data.cleanup")) -> None:
    """Redact credentials in every record of lstm_data's loggers (once per logger)."""
    for name in names:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactingFilter) for f in logger.filters):
            logger.addFilter(RedactingFilter())


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
