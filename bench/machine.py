"""What machine and software a benchmark ran on (recorded in ``--json`` output)."""
from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

__all__ = ["machine_info"]

_PACKAGES = ("lstm_data", "numpy", "cython", "h5py", "zarr", "numcodecs", "keras", "torch",
             "pandas", "pyarrow", "awkward")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=5, cwd=Path(__file__).parent)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def machine_info() -> dict:
    """CPU, core count, OS, Python and package versions, kernel backend, git commit."""
    from lstm_data import kernels

    versions = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "backend": kernels.BACKEND,
        "versions": versions,
        "commit": _git_commit(),
    }
