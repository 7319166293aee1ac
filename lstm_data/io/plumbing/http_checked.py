"""HTTP(S) reads that say what happened: timeouts, retries, and a check of every answer.

:class:`CheckedHTTPFileSystem` is fsspec's HTTP filesystem with its reads
(``cat_file``, ``cat_ranges``, ``info``) replaced; zarr stores, ROOT and Parquet
files at http(s) URLs are read through it (see :mod:`lstm_data.io.plumbing.remote`).

* **Timeouts** (:class:`~lstm_data.io.plumbing.remote_errors.RemoteSettings`):
  ``connect_timeout`` for a connection, ``read_timeout`` for each wait on the
  server (its headers, then every read of the body), and a deadline for the whole
  answer: ``connect_timeout + read_timeout`` plus a second per :data:`MIN_RATE`
  bytes asked (or announced, or received so far), so a server that trickles a byte
  now and then is a :class:`~lstm_data.io.plumbing.remote_errors.RemoteTimeoutError`
  naming the URL, not a read that never ends.
* **Sizes**: every request asks for ``Accept-Encoding: identity``; an answer
  encoded anyway (``Content-Encoding: gzip``) is refused unread, and a body is
  read to at most the bytes asked (or announced) and one more: a longer one is a
  :class:`~lstm_data.errors.RemoteError` naming the URL.
* **Retries**: an answer with status 500, 502, 503 or 504, a reset, or a connection
  closed before the end of the answer is asked again up to ``retries`` times,
  waiting 0.25 s, 0.5 s, 1 s, ... between tries (every read is a GET).
* **Checks**: the answer to a byte range must be ``206`` with a ``Content-Range`` of
  the range asked and as many bytes. A whole file (``200``) for a range that
  starts at 0 gives its first bytes (read no further); for another range it is a
  :class:`~lstm_data.io.plumbing.remote_errors.NoByteRangesError`. Anything else
  is a :class:`~lstm_data.errors.FormatError` naming the URL, the range and what
  came back, never a diagnosis of the file.

Every failure is a :class:`~lstm_data.errors.RemoteError` naming the URL without
credentials (:func:`~lstm_data.io.plumbing.remote_errors.remote_error`).
"""
from __future__ import annotations

import asyncio
import logging
import re
import weakref
from typing import Any, Awaitable, Callable, TypeVar

import aiohttp
from fsspec.implementations.http import HTTPFileSystem

from lstm_data.errors import RemoteError, redact
from lstm_data.io.plumbing.remote_errors import (
    HTTPStatus,
    RemoteSettings,
    RemoteTimeoutError,
    is_transient,
    no_byte_ranges,
    remote_error,
    wrong_answer,
)

_log = logging.getLogger("lstm_data")
__all__ = ["CheckedHTTPFileSystem", "BACKOFF", "MIN_RATE"]

#: seconds before the first retry (doubled for each next one)
BACKOFF = 0.25
#: the slowest answer waited for, in bytes per second (beyond ``connect_timeout + read_timeout``)
MIN_RATE = 64 * 1024
#: bytes read from an answer at a time
_PIECE = 1 << 16
#: requests of one cat_ranges in flight at once
_IN_FLIGHT = 32
_CONTENT_RANGE = re.compile(r"\s*bytes\s+(\d+)-(\d+)/(\d+|\*)\s*$", re.IGNORECASE)
_UNSATISFIED = re.compile(r"\s*bytes\s+\*/(\d+)\s*$", re.IGNORECASE)
T = TypeVar("T")


class _Range:
    """A byte range asked: ``[lo, hi)`` (``hi`` None: to the end), or the last ``suffix`` bytes."""

    def __init__(self, lo: int, hi: int | None, suffix: int | None = None) -> None:
        self.lo, self.hi, self.suffix = lo, hi, suffix

    def header(self) -> str:
        if self.suffix is not None:
            return f"bytes=-{self.suffix}"
        return f"bytes={self.lo}-" + ("" if self.hi is None else str(self.hi - 1))

    def __str__(self) -> str:
        if self.suffix is not None:
            return f"the last {self.suffix} bytes"
        return f"bytes {self.lo}-" + ("the end" if self.hi is None else str(self.hi - 1))

    def expected(self, total: int | None) -> tuple[int, int] | None:
        """``(first, last)`` byte a right answer holds for a file of ``total`` bytes (None: cannot tell)."""
        if self.suffix is not None:
            return None if total is None else (max(0, total - self.suffix), total - 1)
        if total is None:
            return None if self.hi is None else (self.lo, self.hi - 1)
        return self.lo, (total if self.hi is None else min(self.hi, total)) - 1


def _answer(r: aiohttp.ClientResponse, n: int | None = None) -> str:
    """How an answer is described in errors: status, Content-Range, bytes."""
    parts = [f"HTTP {r.status}"]
    content_range = r.headers.get("Content-Range")
    parts.append(f"Content-Range {content_range!r}" if content_range else "no Content-Range")
    if n is not None:
        parts.append(f"{n} bytes")
    elif r.content_length is not None:
        parts.append(f"Content-Length {r.content_length}")
    return ", ".join(parts)


class _Answer:
    """The reading of one answer: its deadline (see the module), its encoding, its body bounded."""

    def __init__(self, url: str, start: float, settings: RemoteSettings, asked: _Range | None) -> None:
        self.url, self.start, self.settings = url, start, settings
        self.scope: asyncio.Timeout | None = None
        self.expected = None if asked is None or asked.hi is None else asked.hi - asked.lo
        self.got = 0

    def deadline(self, size: int | None = None) -> float:
        """When an answer of ``size`` bytes (default: those asked, or received so far and one piece
        more) must be complete."""
        n = size if size is not None else self.expected if self.expected is not None else self.got + _PIECE
        s = self.settings
        return self.start + s.connect_timeout + s.read_timeout + n / MIN_RATE

    def too_slow(self, now: float) -> RemoteTimeoutError:
        return RemoteTimeoutError(
            f"reading {redact(self.url)}: {self.got:,} bytes came in {now - self.start:.1f} s, slower than "
            f"{MIN_RATE // 1024} KiB/s beyond connect_timeout + read_timeout = "
            f"{self.settings.connect_timeout + self.settings.read_timeout:g} s (ReadOptions): a server that "
            "trickles its answer; refused", url=self.url)

    def check_encoding(self, r: aiohttp.ClientResponse) -> None:
        """Refuse, unread, an answer encoded though ``identity`` was asked (it may inflate without end)."""
        encoding = r.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise RemoteError(f"reading {redact(self.url)}: the server answered with Content-Encoding "
                              f"{encoding!r} though only the stored bytes (identity) were asked: refused "
                              "unread (an encoded answer can inflate to any size)", url=self.url)

    async def body(self, r: aiohttp.ClientResponse, size: int | None, *, first: bool = False) -> bytes:
        """At most ``size`` bytes of ``r`` (``None``: as many as come); more than ``size`` is a
        :class:`~lstm_data.errors.RemoteError`, unless ``first`` (the first bytes of a longer file)."""
        if self.scope is not None and size is not None:
            self.scope.reschedule(self.deadline(size))
        parts: list[bytes] = []
        limit = None if size is None else size if first else size + 1
        while limit is None or self.got < limit:
            piece = await r.content.read(_PIECE if limit is None else min(_PIECE, limit - self.got))
            if not piece:
                break
            parts.append(piece)
            self.got += len(piece)
            if size is None and self.scope is not None:
                self.scope.reschedule(self.deadline())
        if size is not None and self.got > size and not first:
            raise RemoteError(f"reading {redact(self.url)}: the answer is longer than the {size:,} bytes asked "
                              "or announced; refused (the rest was not read)", url=self.url)
        return b"".join(parts)


class CheckedHTTPFileSystem(HTTPFileSystem):  # type: ignore[misc] # fsspec is untyped
    """fsspec's HTTP filesystem with timeouts, retries and checked answers (see the module).

    Parameters
    ----------
    connect_timeout, read_timeout, retries
        As :class:`~lstm_data.io.plumbing.remote_errors.RemoteSettings`.
    **kwargs
        As ``fsspec.implementations.http.HTTPFileSystem`` (``asynchronous=True`` for zarr).
    """

    def __init__(self, *, connect_timeout: float, read_timeout: float, retries: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.settings = RemoteSettings(connect_timeout, read_timeout, retries)
        self._timeout = aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout, sock_read=read_timeout)

    async def set_session(self) -> aiohttp.ClientSession:
        """fsspec's session; one made for a store read from zarr's loop is closed at exit too."""
        fresh = self._session is None
        session: aiohttp.ClientSession = await super().set_session()
        if fresh and self.asynchronous:  # fsspec closes only the sessions of synchronous instances
            weakref.finalize(self, self.close_session, asyncio.get_running_loop(), session)
        return session

    async def _retried(self, url: str, attempt: Callable[[], Awaitable[T]]) -> T:
        """``attempt()``, asked again after a transient failure; any failure as one located error."""
        tries = self.settings.retries + 1
        for k in range(tries):
            try:
                return await attempt()
            except Exception as exc:  # noqa: BLE001 - every failure is said as one located error
                if k + 1 < tries and is_transient(exc):
                    await asyncio.sleep(BACKOFF * 2 ** k)
                    continue
                raise remote_error(exc, url, self.settings, k + 1) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _request(self, kwargs: dict[str, Any], asked: _Range | None) -> tuple[dict[str, Any], dict[str, str]]:
        kw = {**self.kwargs, **kwargs}
        headers = dict(kw.pop("headers", None) or {})
        headers["Accept-Encoding"] = "identity"  # bytes as stored: never inflated on the way
        if asked is not None:
            headers["Range"] = asked.header()
        return kw, headers

    async def _cat_file(self, url: str, start: int | None = None, end: int | None = None, **kwargs: Any) -> bytes:
        if (start is not None and start < 0 and end is not None) or (end is not None and end < 0):
            size = await self._size(url)
            start = None if start is None else (start + size if start < 0 else start)
            end = end + size if end < 0 else end
        if start is not None and start < 0:
            asked: _Range | None = _Range(0, None, suffix=-start)
        elif not start and end is None:
            asked = None
        else:
            asked = _Range(start or 0, end)
            if end is not None and end <= asked.lo:
                return b""
        return await self._retried(url, lambda: self._get(url, asked, kwargs))

    async def _get(self, url: str, asked: _Range | None, kwargs: dict[str, Any]) -> bytes:
        _log.debug("GET %s (%s)", url, "the whole file" if asked is None else asked)  # credentials are never in url
        kw, headers = self._request(kwargs, asked)
        session = await self.set_session()
        loop = asyncio.get_running_loop()
        answer = _Answer(url, loop.time(), self.settings, asked)
        try:
            async with asyncio.timeout_at(answer.deadline()) as answer.scope:
                async with session.get(self.encode_url(url), headers=headers, timeout=self._timeout, **kw) as r:
                    if r.status >= 400 and not (r.status == 416 and asked is not None):
                        raise HTTPStatus(r.status, r.reason or "")
                    answer.check_encoding(r)
                    if asked is None:
                        if r.status != 200:
                            raise wrong_answer(url, "the whole file", _answer(r))
                        return await answer.body(r, r.content_length)
                    return await self._ranged(r, url, asked, answer)
        except TimeoutError:
            if answer.scope is not None and answer.scope.expired():
                raise answer.too_slow(loop.time()) from None
            raise

    async def _ranged(self, r: aiohttp.ClientResponse, url: str, asked: _Range, answer: "_Answer") -> bytes:
        """The bytes of an answer to ``asked``, checked (see the module)."""
        if r.status == 416:  # a range past the end of the file: no bytes
            m = _UNSATISFIED.match(r.headers.get("Content-Range", ""))
            if m and asked.suffix is None and asked.lo >= int(m.group(1)):
                return b""
            raise wrong_answer(url, str(asked), _answer(r))
        if r.status == 200:  # the server ignored Range: the whole file follows
            if asked.lo != 0 or asked.suffix is not None:
                raise no_byte_ranges(url)
            want = r.content_length if asked.hi is None else \
                asked.hi if r.content_length is None else min(asked.hi, r.content_length)
            body = await answer.body(r, want, first=want is not None and want != r.content_length)
            if want is not None and len(body) < want:  # closed early: asked again (see the module)
                raise asyncio.IncompleteReadError(body, want)
            return body
        m = _CONTENT_RANGE.match(r.headers.get("Content-Range", ""))
        if r.status != 206 or m is None:
            raise wrong_answer(url, str(asked), _answer(r))
        first, last = int(m.group(1)), int(m.group(2))
        total = None if m.group(3) == "*" else int(m.group(3))
        expected = asked.expected(total)
        if expected is not None and (first, last) != expected:
            raise wrong_answer(url, str(asked), _answer(r))
        body = await answer.body(r, last - first + 1)
        if len(body) != last - first + 1:
            raise wrong_answer(url, str(asked), _answer(r, len(body)))
        return body

    async def _cat_ranges(self, paths: list[str], starts: list[int | None], ends: list[int | None],
                          max_gap: int | None = None, batch_size: int | None = None, on_error: str = "raise",
                          **kwargs: Any) -> list[bytes]:
        """The ranges, read concurrently; the first failure is raised (never handed back as a value)."""
        gate = asyncio.Semaphore(_IN_FLIGHT)

        async def one(path: str, start: int | None, end: int | None) -> bytes:
            async with gate:
                return await self._cat_file(path, start, end, **kwargs)

        results = await asyncio.gather(*(one(p, s, e) for p, s, e in zip(paths, starts, ends)),
                                       return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return list(results)  # type: ignore[arg-type] # no exception left

    async def _size(self, url: str, **kwargs: Any) -> int:
        return await self._retried(url, lambda: self._size_timed(url, kwargs))

    async def _size_timed(self, url: str, kwargs: dict[str, Any]) -> int:
        """:meth:`_size_once` within the deadline of an answer of one byte (see the module)."""
        answer = _Answer(url, asyncio.get_running_loop().time(), self.settings, _Range(0, 1))
        try:
            async with asyncio.timeout_at(answer.deadline()) as answer.scope:
                return await self._size_once(url, kwargs)
        except TimeoutError:
            if answer.scope is not None and answer.scope.expired():
                raise answer.too_slow(asyncio.get_running_loop().time()) from None
            raise

    async def _size_once(self, url: str, kwargs: dict[str, Any]) -> int:
        """The file's size from the answer to its first byte (HEAD is not asked: presigned URLs refuse it)."""
        kw, headers = self._request(kwargs, _Range(0, 1))
        session = await self.set_session()
        async with session.get(self.encode_url(url), headers=headers, timeout=self._timeout, **kw) as r:
            if r.status >= 400 and r.status != 416:
                raise HTTPStatus(r.status, r.reason or "")
            text = r.headers.get("Content-Range", "")
            m = _CONTENT_RANGE.match(text) or _UNSATISFIED.match(text)
            if r.status in (206, 416) and m is not None and m.group(m.lastindex or 1) != "*":
                return int(m.group(m.lastindex or 1))
            if r.status == 200 and r.content_length is not None:
                return int(r.content_length)
            raise wrong_answer(url, "its first byte (to learn its size)", _answer(r))

    async def _info(self, url: str, **kwargs: Any) -> dict[str, Any]:
        return {"name": url, "size": await self._size(url, **kwargs), "type": "file"}
