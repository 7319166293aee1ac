"""Will a tree's decoded values fit in memory? Checked before reading, so a too-big read fails at once.

The memory a process may still take is the least of: the system's ``MemAvailable``,
its cgroup's ``memory.max`` less ``memory.current``, and its ``RLIMIT_AS`` /
``RLIMIT_DATA`` less what it already maps. A read that needs more is refused with
the routes that work: read fewer columns, or convert once to an on-disk store
that is then read chunk by chunk.
"""
from __future__ import annotations

import resource
from pathlib import Path

__all__ = ["available_bytes", "check_fits", "fits", "RAM_SHARE"]

#: with ``in_ram=None``, values are read whole when they take at most this share of the memory left
RAM_SHARE = 0.5


def _proc_kib(file: str, field: str) -> int | None:
    """Bytes of the ``field: N kB`` line of ``/proc/<file>``, or ``None`` when it cannot be read."""
    try:
        for line in Path("/proc", file).read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_room() -> int | None:
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit == "max":
            return None
        return int(limit) - int(Path("/sys/fs/cgroup/memory.current").read_text().strip())
    except (OSError, ValueError):
        return None


def available_bytes() -> int | None:
    """Bytes this process may still allocate, or ``None`` when nothing tells."""
    room = [_proc_kib("meminfo", "MemAvailable"), _cgroup_room()]
    for limit, used in ((resource.RLIMIT_AS, "VmSize"), (resource.RLIMIT_DATA, "VmData")):
        soft = resource.getrlimit(limit)[0]
        current = _proc_kib("self/status", used)
        if soft != resource.RLIM_INFINITY and current is not None:
            room.append(soft - current)
    known = [r for r in room if r is not None]
    return max(0, min(known)) if known else None


def fits(need: int, share: float = RAM_SHARE) -> bool:
    """Whether ``need`` bytes take at most ``share`` of the memory left (``True`` when nothing tells)."""
    room = available_bytes()
    return room is None or need <= share * room


def check_fits(need: int, *, file: str, tree: str, columns: int) -> None:
    """Raise MemoryError unless ``need`` bytes of decoded values fit in what is available.

    Raises
    ------
    MemoryError
        Says how much is needed and available, and the routes: fewer columns
        (``columns=``), reads on demand (``in_ram=False``), or ``lstm-data convert`` to
        an on-disk store read by chunk.
    """
    room = available_bytes()
    if room is None or need <= room:
        return
    raise MemoryError(
        f"{file}: tree {tree!r}: its {columns} columns decode to about {need / 2**30:.2f} GiB, but this "
        f"process can take only {room / 2**30:.2f} GiB more; read fewer columns (columns=[...], or a "
        f"BatchSpec that needs fewer), read it from disk cluster by cluster (in_ram=False), or convert it "
        f"once to an on-disk store that batches read chunk by chunk: lstm-data convert '{file}:{tree}' "
        f"data.zarr, then lstm_data.open('data.zarr')")
