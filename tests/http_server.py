"""HTTP servers on 127.0.0.1 for tests: one that serves byte ranges as real servers do, and one that misbehaves.

:class:`RangeHandler` answers ``Range: bytes=a-b[, c-d ...]`` with 206 (multipart for
several ranges) and counts the bytes it sends. :class:`MisbehavingHandler` serves the
same files under a first path segment that names how it misbehaves (:data:`MODES`):
``/stall/x.root`` sends its headers and then nothing, ``/fail-once/x.root`` answers
HTTP 500 to the first request for ``x.root``, and so on.
"""
from __future__ import annotations

import contextlib
import functools
import http.server
import os
import re
import threading
from typing import Any, Iterator

_RANGE = re.compile(r"(\d*)-(\d*)")

#: how :class:`MisbehavingHandler` misbehaves, by the first segment of the path
MODES = {
    "stall": "sends the headers of its answer, then nothing",
    "shift": "answers a range with the bytes one further on (and says so in Content-Range)",
    "short": "answers a range with half its bytes (Content-Range says all of them)",
    "cut": "closes the connection half-way through the body",
    "redirect": "answers 302 to the same file without the mode",
    "fail-once": "answers HTTP 500 to the first request of each file or store",
    "no-ranges": "ignores Range: every answer is the whole file",
}


class RangeHandler(http.server.SimpleHTTPRequestHandler):
    """GET with ``Range: bytes=a-b[, c-d ...]`` (206, multipart for several ranges); counts the bytes sent."""

    sent: list = []

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def spans(self, header: str, size: int) -> list[tuple[int, int]]:
        out = []
        for part in header.split("=", 1)[1].split(","):
            a, b = _RANGE.match(part.strip()).groups()
            if a == "":
                lo, hi = max(0, size - int(b)), size - 1
            else:
                lo, hi = int(a), min(size - 1, int(b)) if b else size - 1
            out.append((lo, hi))
        return out

    def do_GET(self) -> None:
        header = self.headers.get("Range")
        path = self.translate_path(self.path)
        if header is None or not os.path.isfile(path):
            size = os.path.getsize(path) if os.path.isfile(path) else 0
            type(self).sent.append(size)
            return super().do_GET()
        with open(path, "rb") as fh:
            data = fh.read()
        size = len(data)
        spans = self.spans(header, size)
        if spans[0][0] >= size:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        type(self).sent.append(sum(hi - lo + 1 for lo, hi in spans))
        self.send_response(206)
        if len(spans) == 1:
            lo, hi = spans[0]
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Range", f"bytes {lo}-{hi}/{size}")
            self.send_header("Content-Length", str(hi - lo + 1))
            self.end_headers()
            self.wfile.write(data[lo:hi + 1])
            return
        body = b"".join(b"--XYZ\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes "
                        + f"{lo}-{hi}/{size}".encode() + b"\r\n\r\n" + data[lo:hi + 1] + b"\r\n"
                        for lo, hi in spans) + b"--XYZ--\r\n"
        self.send_header("Content-Type", "multipart/byteranges; boundary=XYZ")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class MisbehavingHandler(RangeHandler):
    """:class:`RangeHandler` under ``/<mode>/...`` paths that misbehave as :data:`MODES` says."""

    failed: set = set()
    stop: threading.Event = threading.Event()

    def do_HEAD(self) -> None:
        self.path = "/" + self.path.lstrip("/").partition("/")[2] if self._mode() else self.path
        super().do_HEAD()

    def _mode(self) -> str | None:
        mode = self.path.lstrip("/").partition("/")[0]
        return mode if mode in MODES else None

    def do_GET(self) -> None:
        mode = self._mode()
        if mode is None:
            return super().do_GET()
        self.path = "/" + self.path.lstrip("/").partition("/")[2]
        path = self.translate_path(self.path)
        if mode == "redirect":
            self.send_response(302)
            self.send_header("Location", self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        top = self.path.lstrip("/").partition("/")[0]  # the file, or the store
        if mode == "fail-once" and top not in type(self).failed:
            type(self).failed.add(top)
            self.send_error(500)
            return
        if not os.path.isfile(path) or mode == "fail-once":
            return super().do_GET()
        with open(path, "rb") as fh:
            data = fh.read()
        header = self.headers.get("Range") if mode != "no-ranges" else None
        lo, hi = self.spans(header, len(data))[0] if header else (0, len(data) - 1)
        body = data[lo:hi + 1]
        status, content_range = (206, f"bytes {lo}-{hi}/{len(data)}") if header else (200, None)
        length = len(body)
        if mode == "shift" and header:
            lo, hi = lo + 1, min(hi + 1, len(data) - 1)
            body, content_range = data[lo:hi + 1], f"bytes {lo}-{hi}/{len(data)}"
            length = len(body)
        elif mode == "short" and header:
            body = body[:max(1, len(body) // 2)]
            length = len(body)
        elif mode == "cut":
            body = body[:len(body) // 2]
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        if content_range:
            self.send_header("Content-Range", content_range)
        self.send_header("Content-Length", str(length))
        self.end_headers()
        if mode == "stall":
            self.wfile.flush()
            type(self).stop.wait(30)
            self.close_connection = True
            return
        self.wfile.write(body)
        if mode == "cut":
            self.wfile.flush()
            self.close_connection = True


class QuietServer(http.server.ThreadingHTTPServer):
    """Clients that stop reading an answer (or time out) are no error of the test."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


@contextlib.contextmanager
def serve(root: Any, handler: type[http.server.SimpleHTTPRequestHandler]) -> Iterator[tuple[str, Any]]:
    """Serve directory ``root`` with a fresh subclass of ``handler`` (its own ``sent``, ``failed``,
    ``stop``); yields the base URL and that class."""
    fresh = type(handler.__name__, (handler,), {"sent": [], "failed": set(), "stop": threading.Event()})
    server = QuietServer(("127.0.0.1", 0), functools.partial(fresh, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", fresh
    finally:
        fresh.stop.set()
        server.shutdown()
        server.server_close()
