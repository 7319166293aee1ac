"""How reads at URLs fail: :class:`RemoteSettings` (timeouts, retries) and the errors that name the URL.

Every failure of a transport (aiohttp, fsspec, the OS) reaches the user as one
:class:`~lstm_data.errors.RemoteError` naming the URL without credentials; its
subclasses are also the built-in error of the case (``FileNotFoundError`` for
HTTP 404, ``PermissionError`` for 401/403, ``TimeoutError``,
``ConnectionError``), so code that catches those keeps working. A server that
answers a byte range with other bytes is a :class:`~lstm_data.errors.FormatError`
naming the URL, the range asked and what came back (:func:`wrong_answer`).
"""
from __future__ import annotations

import socket
import sys
from dataclasses import dataclass
from typing import Any

from lstm_data.errors import FormatError, RemoteError, redact

__all__ = ["RemoteSettings", "RemoteNotFoundError", "RemotePermissionError", "RemoteConnectionError",
           "RemoteRefusedError", "RemoteTimeoutError", "NoByteRangesError", "WrongAnswerError", "HTTPStatus", "no_byte_ranges",
           "wrong_answer", "remote_error", "is_transient", "TRANSPORT_ERRORS", "CONNECT_TIMEOUT",
           "READ_TIMEOUT", "RETRIES"]

#: defaults of :class:`RemoteSettings` (``ReadOptions.connect_timeout``, ``read_timeout``, ``retries``)
CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 30.0
RETRIES = 3
#: HTTP statuses that a retry may cure (a server or gateway having a bad moment)
_TRANSIENT_STATUS = frozenset({500, 502, 503, 504})


@dataclass(frozen=True)
class RemoteSettings:
    """How long to wait for a server, and how often to ask again.

    Attributes
    ----------
    connect_timeout : float
        Seconds to wait for a connection.
    read_timeout : float
        Seconds to wait for each piece of an answer (its headers, then every read of
        its body): a server that stalls longer is a :class:`RemoteTimeoutError`.
    retries : int
        Times a read is asked again after an HTTP 500, 502, 503 or 504, a reset or a
        connection closed before the end of the answer (reads are GETs: idempotent);
        the waits between tries double from a quarter of a second.
    """

    connect_timeout: float = CONNECT_TIMEOUT
    read_timeout: float = READ_TIMEOUT
    retries: int = RETRIES


class RemoteNotFoundError(RemoteError, FileNotFoundError):
    """Nothing at the URL (HTTP 404)."""


class RemotePermissionError(RemoteError, PermissionError):
    """The server refuses the read (HTTP 401, 403)."""


class RemoteConnectionError(RemoteError, ConnectionError):
    """No connection to the server, or a connection lost before the end of an answer."""


class RemoteRefusedError(RemoteConnectionError, ConnectionRefusedError):
    """Nothing listens at the host and port of the URL."""


class RemoteTimeoutError(RemoteError, TimeoutError):
    """No connection within ``connect_timeout``, or no answer within ``read_timeout``."""


class NoByteRangesError(RemoteError):
    """The server of a URL answers a request for some bytes of a file with the whole file.

    ROOT and Parquet files are read at URLs by byte ranges (HTTP ``Range`` requests);
    the message names the URL and the ways out: download the file, or serve it from
    a server that answers ``Range`` requests (206 Partial Content).
    """


class HTTPStatus(Exception):
    """An HTTP error status (raised inside a read, turned into a :class:`RemoteError` by :func:`remote_error`)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"HTTP {status} {reason}".rstrip())
        self.status, self.reason = status, reason


class WrongAnswerError(FormatError):
    """A server answered a request for some bytes of a file with other bytes (see :func:`wrong_answer`)."""


#: what a reader lets through unchanged: the transport already said what happened
TRANSPORT_ERRORS: tuple[type[BaseException], ...] = (RemoteError, WrongAnswerError)


def no_byte_ranges(url: str) -> NoByteRangesError:
    """The error for a server that does not serve byte ranges of ``url`` (shown without credentials)."""
    return NoByteRangesError(f"the server of {redact(url)} does not serve byte ranges (it ignores HTTP Range "
                             "requests and sends the whole file), which reading ROOT and Parquet files at URLs "
                             "needs: download the file and read it locally, or serve it with Range support",
                             url=url)


def wrong_answer(url: str, asked: str, got: str) -> WrongAnswerError:
    """A ``FormatError`` for an answer that is not the bytes asked: names ``url``, the range and the answer."""
    return WrongAnswerError(f"the server answered a request for {asked} with {got}: not the bytes asked (a server "
                       "or proxy that mangles byte ranges); the file itself was not read", file=url)


def _causes(exc: BaseException) -> list[BaseException]:
    """``exc`` and the errors under it (aiohttp keeps the OS error as ``os_error``)."""
    seen: set[int] = set()
    out: list[BaseException] = []
    stack: list[Any] = [exc]
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        out.append(e)
        stack += [getattr(e, "os_error", None), e.__cause__, e.__context__]
    return out


def _aiohttp(name: str) -> type[BaseException] | None:
    module = sys.modules.get("aiohttp")
    cls = getattr(module, name, None) if module is not None else None
    return cls if isinstance(cls, type) else None


def _is(exc: BaseException, *names: str) -> bool:
    classes = tuple(c for c in (_aiohttp(n) for n in names) if c is not None)
    return bool(classes) and isinstance(exc, classes)


def is_transient(exc: BaseException) -> bool:
    """Whether asking again may cure ``exc``: HTTP 500/502/503/504, a reset, a connection closed early."""
    if isinstance(exc, HTTPStatus):
        return exc.status in _TRANSIENT_STATUS
    if isinstance(exc, RemoteError) or isinstance(exc, TimeoutError) or _is(exc, "ServerTimeoutError"):
        return False
    if _is(exc, "ServerDisconnectedError", "ClientPayloadError"):
        return True
    return any(isinstance(e, (ConnectionResetError, BrokenPipeError)) or type(e).__name__ == "IncompleteReadError"
               for e in _causes(exc))


def _tries(n: int) -> str:
    return f" ({n} tries)" if n > 1 else ""


def remote_error(exc: BaseException, url: str, settings: RemoteSettings | None = None,
                 tries: int = 1) -> BaseException:
    """The one error that says what happened to a read of ``url`` that raised ``exc``.

    ``exc`` itself when it already says so (a :class:`~lstm_data.errors.RemoteError`, a
    ``FormatError`` of a wrong answer); otherwise a :class:`~lstm_data.errors.RemoteError`
    subclass naming the URL without credentials and the cause.
    """
    if isinstance(exc, (RemoteError, FormatError)):
        return exc
    told = next((e for e in _causes(exc) if isinstance(e, TRANSPORT_ERRORS)), None)
    if told is not None:  # wrapped on its way (fsspec's sync turns a TimeoutError into its own)
        return told
    settings = settings or RemoteSettings()
    shown = redact(url)
    if isinstance(exc, HTTPStatus):
        text = f"cannot read {shown}: {exc}{_tries(tries)}"
        if exc.status == 404:
            err: RemoteError = RemoteNotFoundError(f"nothing at {shown} (HTTP 404 Not Found)", url=url)
        else:
            err = (RemotePermissionError if exc.status in (401, 403) else RemoteError)(text, url=url)
        err.status = exc.status
        return err
    if _is(exc, "ConnectionTimeoutError"):
        return RemoteTimeoutError(f"cannot connect to {shown}: no connection within connect_timeout = "
                                  f"{settings.connect_timeout:g} s", url=url)
    if isinstance(exc, TimeoutError) or _is(exc, "ServerTimeoutError"):
        return RemoteTimeoutError(f"reading {shown}: the server sent nothing for read_timeout = "
                                  f"{settings.read_timeout:g} s (ReadOptions.read_timeout)", url=url)
    causes = _causes(exc)
    refused = next((e for e in causes if isinstance(e, ConnectionRefusedError)), None)
    host = url.split("://", 1)[-1].split("/", 1)[0].rpartition("@")[2]
    if refused is not None:
        return RemoteRefusedError(f"cannot connect to {shown}: connection refused (nothing listens at {host})",
                                  url=url)
    unknown = next((e for e in causes if isinstance(e, socket.gaierror)), None)
    if unknown is not None:
        why = redact(getattr(unknown, "strerror", None) or unknown)
        return RemoteConnectionError(f"cannot connect to {shown}: host name not found ({why})", url=url)
    cause = f"{type(exc).__name__}: {redact(exc)}"
    if is_transient(exc):
        return RemoteConnectionError(f"reading {shown}: the connection was closed before the end of the "
                                     f"answer{_tries(tries)} ({cause})", url=url)
    if isinstance(exc, FileNotFoundError):
        return RemoteNotFoundError(f"nothing at {shown}", url=url)
    if isinstance(exc, ConnectionError) or _is(exc, "ClientConnectorError"):
        return RemoteConnectionError(f"cannot connect to {shown} ({cause})", url=url)
    return RemoteError(f"cannot read {shown} ({cause})", url=url)
