"""Peak memory of the current process."""
from __future__ import annotations

import resource
import sys

__all__ = ["peak_rss_kib"]


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
