"""Peak memory: of the current process, and of a fresh process that reads one file."""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

from bench import child_env

__all__ = ["peak_rss_kib", "fresh_process_peak"]

_PEAK_CODE = """\
import importlib, json, sys
module, name = sys.argv[1].split(":")
ds = getattr(importlib.import_module(module), name)(sys.argv[2])
rss = next(int(line.split()[1]) * 1024 for line in open('/proc/self/status')
           if line.startswith('VmHWM:'))
print(json.dumps([rss, ds.nbytes]))
"""


def fresh_process_peak(path: str | os.PathLike, reader: str) -> tuple[int, int] | None:
    """``(peak RSS bytes, columnar bytes)`` of a fresh process that reads ``path`` into RAM.

    ``reader`` names the function, ``"module:function"`` (it returns a dataset
    with ``nbytes``). The peak is ``VmHWM`` from ``/proc/self/status``: unlike
    ``ru_maxrss`` it starts afresh at ``exec``, so this process's memory does not
    leak into it. ``None`` where ``/proc`` is missing.
    """
    if not os.path.exists("/proc/self/status"):
        return None
    out = subprocess.run([sys.executable, "-c", _PEAK_CODE, reader, os.fspath(path)], check=True,
                         capture_output=True, text=True, env=child_env()).stdout
    rss, nbytes = json.loads(out.strip().splitlines()[-1])
    return rss, nbytes


def peak_rss_kib() -> int:
    """Peak resident set size of this process in KiB.

    On Linux this is ``VmHWM`` from ``/proc/self/status``, which belongs to the
    process itself; ``ru_maxrss`` of a child started by ``fork`` may carry the
    parent's peak. Elsewhere ``ru_maxrss`` is used (bytes on macOS).
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak // 1024 if sys.platform == "darwin" else peak
