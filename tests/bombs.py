"""Compression bombs for tests, and a run of code in a fresh process that reports its peak memory.

The frames are made by hand, in microseconds, never by compressing gigabytes:

* :func:`zstd_bomb`: a Zstd frame of RLE blocks (4 bytes per 128 KiB of zeros): 32 KiB
  decode to 1 GiB. ``declared=False`` leaves the content size out of the header, as a
  streaming compressor does.
* :func:`blosc_bomb`: a Blosc frame whose every block start points at one compressed block
  of zeros: 17 KiB decode to 1 GiB.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
MiB = 1 << 20
#: the peak memory (RSS) a process may reach while it refuses a bomb
PEAK_LIMIT_MB = 500
_BLOCK = 128 * 1024


def zstd_bomb(n: int, *, declared: bool = True) -> bytes:
    """A Zstd frame that decodes to ``n`` zero bytes (a multiple of 128 KiB)."""
    if declared:  # single segment, 8-byte content size
        head = b"\x28\xb5\x2f\xfd\xe0" + n.to_bytes(8, "little")
    else:  # no content size; a 128 KiB window
        head = b"\x28\xb5\x2f\xfd\x00\x38"
    rle = ((_BLOCK << 3) | 2).to_bytes(3, "little") + b"\0"
    last = ((_BLOCK << 3) | 3).to_bytes(3, "little") + b"\0"
    return head + rle * (n // _BLOCK - 1) + last


def blosc_bomb(n: int) -> bytes:
    """A Blosc (lz4) frame that decodes to ``n`` zero bytes (a multiple of 256 KiB), typesize 1."""
    import numcodecs

    block = 1 << 18
    one = numcodecs.Blosc(cname="lz4", clevel=9, shuffle=0, blocksize=block).encode(np.zeros(block, np.uint8))
    data = one[int.from_bytes(one[16:20], "little"):]  # the one block's streams
    k = n // block
    body = (16 + 4 * k).to_bytes(4, "little") * k + data  # every block starts at that one
    sizes = n.to_bytes(4, "little") + block.to_bytes(4, "little") + (16 + len(body)).to_bytes(4, "little")
    return one[:4] + sizes + body


def with_crc32c(frame: bytes) -> bytes:
    """``frame`` followed by its CRC-32C, as zarr's ``crc32c`` codec writes it."""
    import google_crc32c

    return frame + int(google_crc32c.value(frame)).to_bytes(4, "little")


#: the peak RSS of this process in KiB: ``VmHWM`` of its own memory map (``ru_maxrss`` is not: Linux
#: carries the parent's peak across ``exec``, so a child of a large test process would report it)
_PEAK = """
def _peak_kb():
    try:
        with open('/proc/self/status') as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith('VmHWM:'))
    except (OSError, StopIteration):
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
"""


def run_measured(code: str, timeout: float = 60) -> dict[str, Any]:
    """Run ``code`` in a fresh Python process; returns what it raised and its peak RSS.

    Keys: ``error`` (the exception's class name, or ``None``), ``ours`` (a FormatError or RemoteError),
    ``message``, ``file``, ``url`` and ``peak_mb``.
    """
    script = (_PEAK + "import json\nfrom lstm_data.errors import FormatError, RemoteError\nout = {'error': None}\n"
              "try:\n" + textwrap.indent(textwrap.dedent(code), "    ") +
              "\nexcept Exception as exc:\n"
              "    out.update(error=type(exc).__name__, ours=isinstance(exc, (FormatError, RemoteError)),\n"
              "               message=str(exc),\n"
              "               file=getattr(exc, 'file', None), url=getattr(exc, 'url', None))\n"
              "out['peak_mb'] = _peak_kb() / 1024\n"
              "print(json.dumps(out))\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))
